package etcdkv_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/wctoolkit/wc/pkg/session/store/etcdkv"
	"github.com/wctoolkit/wc/pkg/session/store/etcdkv/etcdtest"
	"github.com/wctoolkit/wc/pkg/session/store/kv"
)

const secretPassword = "pw-S3CRET-never-shown"

// certFiles writes a CA and a certificate it signs (for 127.0.0.1) to
// dir/NAME.pem and dir/NAME-key.pem, and returns what the files hold.
func certFiles(t *testing.T, dir, caName string, leaves ...string) []string {
	t.Helper()
	var written []string
	write := func(name string, der []byte, key *ecdsa.PrivateKey) {
		certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
		keyDER, err := x509.MarshalECPrivateKey(key)
		if err != nil {
			t.Fatal(err)
		}
		keyPEM := pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER})
		os.WriteFile(filepath.Join(dir, name+".pem"), certPEM, 0o600)
		os.WriteFile(filepath.Join(dir, name+"-key.pem"), keyPEM, 0o600)
		written = append(written, string(certPEM), string(keyPEM))
	}
	caKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: caName},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	write(caName, caDER, caKey)
	ca, _ := x509.ParseCertificate(caDER)
	for i, name := range leaves {
		key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		tmpl := &x509.Certificate{
			SerialNumber: big.NewInt(int64(i + 2)), Subject: pkix.Name{CommonName: name},
			NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
			IPAddresses: []net.IP{net.ParseIP("127.0.0.1")},
			KeyUsage:    x509.KeyUsageDigitalSignature,
			ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
		if err != nil {
			t.Fatal(err)
		}
		write(name, der, key)
	}
	return written
}

func freePort(t *testing.T) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// secureMember starts one etcd member that takes TLS with client
// certificates only, with users: root, and wc, who may use /wc-secret/.
func secureMember(t *testing.T, dir string) string {
	client, peer := freePort(t), freePort(t)
	endpoint := fmt.Sprintf("127.0.0.1:%d", client)
	peerURL := fmt.Sprintf("http://127.0.0.1:%d", peer)
	cmd := exec.Command(etcdtest.Binary(t), "--name", "s1", "--data-dir", filepath.Join(dir, "data"),
		"--listen-client-urls", "https://"+endpoint, "--advertise-client-urls", "https://"+endpoint,
		"--listen-peer-urls", peerURL, "--initial-advertise-peer-urls", peerURL, "--initial-cluster", "s1="+peerURL,
		"--cert-file", filepath.Join(dir, "server.pem"), "--key-file", filepath.Join(dir, "server-key.pem"),
		"--trusted-ca-file", filepath.Join(dir, "ca.pem"), "--client-cert-auth")
	log, err := os.Create(filepath.Join(dir, "etcd.log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait(); log.Close() })

	pair, err := tls.LoadX509KeyPair(filepath.Join(dir, "client.pem"), filepath.Join(dir, "client-key.pem"))
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	caPEM, _ := os.ReadFile(filepath.Join(dir, "ca.pem"))
	pool.AppendCertsFromPEM(caPEM)
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{endpoint}, DialTimeout: 5 * time.Second, Logger: zap.NewNop(),
		TLS: &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{pair}}})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for {
		if _, err := cli.Status(ctx, endpoint); err == nil {
			break
		} else if ctx.Err() != nil {
			out, _ := os.ReadFile(filepath.Join(dir, "etcd.log"))
			t.Fatalf("the secure member did not start: %v\n%s", err, out)
		}
		time.Sleep(100 * time.Millisecond)
	}
	for _, step := range []func() error{
		func() error { _, err := cli.UserAdd(ctx, "root", "root-"+secretPassword); return err },
		func() error { _, err := cli.UserGrantRole(ctx, "root", "root"); return err },
		func() error { _, err := cli.RoleAdd(ctx, "wc"); return err },
		func() error {
			_, err := cli.RoleGrantPermission(ctx, "wc", "/wc-secret/", clientv3.GetPrefixRangeEnd("/wc-secret/"), clientv3.PermissionType(clientv3.PermReadWrite))
			return err
		},
		func() error { _, err := cli.UserAdd(ctx, "wc", secretPassword); return err },
		func() error { _, err := cli.UserGrantRole(ctx, "wc", "wc"); return err },
		func() error { _, err := cli.AuthEnable(ctx); return err },
	} {
		if err := step(); err != nil {
			t.Fatalf("setting up auth: %v", err)
		}
	}
	return endpoint
}

// TestSecrets: over TLS with client certificates and a password, the
// engine works; every way of getting them wrong fails on one line that
// shows neither the password nor a certificate or key.
func TestSecrets(t *testing.T) {
	etcdtest.Binary(t)
	dir := t.TempDir()
	secrets := certFiles(t, dir, "ca", "server", "client")
	secrets = append(secrets, certFiles(t, dir, "other-ca", "stranger")...)
	endpoint := secureMember(t, dir)
	f := func(name string) string { return filepath.Join(dir, name) }
	good := fmt.Sprintf("cacert=%s&cert=%s&key=%s", f("ca.pem"), f("client.pem"), f("client-key.pem"))
	withPassword := func(string) string { return secretPassword }

	open := func(rawURL string, getenv func(string) string) (*etcdkv.Engine, error) {
		cfg, err := etcdkv.ParseURL(rawURL, getenv)
		if err != nil {
			return nil, err
		}
		if s := cfg.String(); strings.Contains(s, secretPassword) {
			t.Errorf("Config.String() shows the password: %s", s)
		}
		return etcdkv.Open(cfg)
	}
	e, err := open("etcd://"+endpoint+"/wc-secret?user=wc&"+good, withPassword)
	if err != nil {
		t.Fatalf("the right password and certificates: %v", err)
	}
	if err := e.Update(func(tx kv.Txn) error { return tx.Set([]byte("k"), []byte("v")) }); err != nil {
		t.Fatal(err)
	}
	if err := e.View(func(tx kv.Txn) error { _, err := tx.Get([]byte("k")); return err }); err != nil {
		t.Fatal(err)
	}
	e.Close()

	quick := "&dial-timeout=1s&timeout=1s"
	for _, c := range []struct {
		name, url string
		getenv    func(string) string
		kind      error
		want      string
	}{
		{"wrong password", "etcd://" + endpoint + "/wc-secret?user=wc&" + good, func(string) string { return "wrong-" + secretPassword }, etcdkv.ErrDenied,
			"etcd: authentication failed for user wc"},
		{"outside the user's permission", "etcd://" + endpoint + "/elsewhere?user=wc&" + good, withPassword, etcdkv.ErrDenied,
			"etcd: connecting refused: etcdserver: permission denied"},
		{"no password at all", "etcd://" + endpoint + "/wc-secret?" + good + quick, withPassword, etcdkv.ErrDenied, ""},
		{"no client certificate", "etcd://" + endpoint + "/wc-secret?user=wc&cacert=" + f("ca.pem") + quick, withPassword, etcdkv.ErrUnavailable,
			"etcd: connecting failed: TLS with " + endpoint + " failed: remote error: tls: bad certificate"},
		{"a certificate of another CA", fmt.Sprintf("etcd://%s/wc-secret?user=wc&cacert=%s&cert=%s&key=%s%s", endpoint, f("ca.pem"), f("stranger.pem"), f("stranger-key.pem"), quick), withPassword, etcdkv.ErrUnavailable,
			"etcd: connecting failed: TLS with " + endpoint + " failed: remote error: tls: bad certificate"},
		{"not trusting the server", fmt.Sprintf("etcd://%s/wc-secret?user=wc&cacert=%s&cert=%s&key=%s%s", endpoint, f("other-ca.pem"), f("client.pem"), f("client-key.pem"), quick), withPassword, etcdkv.ErrUnavailable,
			"etcd: connecting failed: TLS with " + endpoint + " failed: tls: failed to verify certificate: x509: certificate signed by unknown authority"},
		{"plain to a TLS member", "etcd://" + endpoint + "/wc-secret?user=wc" + quick, withPassword, etcdkv.ErrUnavailable,
			"etcd: connecting failed: no member of " + endpoint + " answered within 1s"},
	} {
		e, err := open(c.url, c.getenv)
		if err == nil {
			e.Close()
			t.Errorf("%s: opened", c.name)
			continue
		}
		msg := err.Error()
		t.Logf("%s: %s", c.name, msg)
		if c.kind != nil && !errors.Is(err, c.kind) {
			t.Errorf("%s: %v, want kind %v", c.name, err, c.kind)
		}
		if c.want != "" && msg != c.want {
			t.Errorf("%s: %q, want %q", c.name, msg, c.want)
		}
		if strings.Contains(msg, "\n") || strings.Contains(msg, "S3CRET") {
			t.Errorf("%s: %q spans lines or shows the password", c.name, msg)
		}
		for _, s := range secrets {
			for _, line := range strings.Split(s, "\n") {
				if len(line) > 16 && !strings.HasPrefix(line, "-----") && strings.Contains(msg, line) {
					t.Errorf("%s: %q shows a certificate or key", c.name, msg)
				}
			}
		}
	}
}
