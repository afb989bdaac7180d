package etcdkv

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

func env(vars map[string]string) func(string) string {
	return func(k string) string { return vars[k] }
}

func TestParseURL(t *testing.T) {
	cfg, err := ParseURL("etcd://10.0.0.1:2379,node-b:2379,[::1]:2381/team/ci-bots?timeout=2s&dial-timeout=1500ms&user=bot", env(map[string]string{PasswordEnv: "pw"}))
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"10.0.0.1:2379", "node-b:2379", "[::1]:2381"}; !slices.Equal(cfg.Endpoints, want) {
		t.Errorf("endpoints %q, want %q", cfg.Endpoints, want)
	}
	if cfg.Prefix != "team/ci-bots" || cfg.RequestTimeout != 2*time.Second || cfg.DialTimeout != 1500*time.Millisecond ||
		cfg.Username != "bot" || cfg.Password != "pw" || cfg.TLS != nil {
		t.Errorf("parsed %+v", cfg)
	}
	if got, want := cfg.String(), "etcd://10.0.0.1:2379,node-b:2379,[::1]:2381/team/ci-bots?user=bot"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
	cfg, err = ParseURL("etcd://127.0.0.1:2379/wc", env(nil))
	if err != nil || cfg.RequestTimeout != DefaultRequestTimeout || cfg.DialTimeout != DefaultDialTimeout || cfg.Username != "" {
		t.Errorf("defaults: %+v, %v", cfg, err)
	}
	if cfg, err = ParseURL("etcd://127.0.0.1:2379/wc?tls=1", env(nil)); err != nil || cfg.TLS == nil || cfg.TLS.RootCAs != nil {
		t.Errorf("tls=1: %+v, %v; want TLS with the system's CAs", cfg.TLS, err)
	}
}

// TestParseURLErrors: each error names what is wrong, on one line, and
// repeats no secret.
func TestParseURLErrors(t *testing.T) {
	dir := t.TempDir()
	garbage := filepath.Join(dir, "garbage.pem")
	os.WriteFile(garbage, []byte("-----BEGIN CERTIFICATE-----\nU0VDUkVULUNFUlQtQ09OVEVOVA==\n-----END CERTIFICATE-----\n"), 0o600)
	for _, c := range []struct{ url, want string }{
		{"etcd://127.0.0.1:2379", "an etcd store URL needs a /PREFIX naming the store in the cluster"},
		{"etcd://127.0.0.1:2379/", "an etcd store URL needs a /PREFIX naming the store in the cluster"},
		{"etcd://127.0.0.1:2379?user=x", "an etcd store URL needs a /PREFIX after its hosts"},
		{"etcd://127.0.0.1/wc", `an etcd store URL's hosts are HOST:PORT, separated by commas (not "127.0.0.1")`},
		{"etcd://a:1,,b:2/wc", `an etcd store URL's hosts are HOST:PORT, separated by commas (not "")`},
		{"etcd://a:1/wc//x", `an etcd store's prefix is names separated by single slashes (not "wc//x")`},
		{"etcd://a:1/../x", `an etcd store's prefix is names separated by single slashes (not "../x")`},
		{"etcd://a:1/w%00c", `an etcd store's prefix holds only letters, digits, '.', '_', '-' and '/' (not "w\x00c")`},
		{"etcd://a:1/" + strings.Repeat("p", 129), "an etcd store's prefix is at most 128 bytes"},
		{"etcd://a:1/wc?password=SECRET-PW", `an etcd store URL takes no parameter "password" (it takes cacert, cert, key, tls, server-name, user, timeout, dial-timeout)`},
		{"etcd://bot:SECRET-PW@a:1/wc", "an etcd store URL takes no user or password before its hosts: give user=NAME and the password in WC_STORE_PASSWORD"},
		{"etcd://a:1/wc?user=bot", "the etcd user bot needs its password in WC_STORE_PASSWORD"},
		{"etcd://a:1/wc?timeout=0s", `an etcd store URL's timeout is a positive duration such as 5s (not "0s")`},
		{"etcd://a:1/wc?user=a&user=b", "an etcd store URL's parameter user is given 2 times"},
		{"etcd://a:1/wc?tls=yes", "an etcd store URL's tls is 1 or 0"},
		{"etcd://a:1/wc?cert=" + garbage, "an etcd store URL gives cert and key together"},
		{"etcd://a:1/wc?cacert=" + dir + "/missing.pem", "cannot read the etcd CA certificate (cacert): " + dir + "/missing.pem: no such file or directory"},
		{"etcd://a:1/wc?cacert=" + garbage, "the etcd CA certificate " + garbage + " (cacert) holds no PEM certificate"},
		{"etcd://a:1/wc?cert=" + garbage + "&key=" + garbage, "the etcd client certificate " + garbage + " and key " + garbage + " are not a PEM certificate and its private key"},
		{"http://a:1/wc", "an etcd store is named etcd://HOST:PORT[,HOST:PORT…]/PREFIX"},
	} {
		vars := map[string]string{PasswordEnv: "SECRET-PW"}
		if strings.HasSuffix(c.url, "?user=bot") {
			vars = nil
		}
		_, err := ParseURL(c.url, env(vars))
		if err == nil {
			t.Errorf("%s: parsed", c.url)
			continue
		}
		if err.Error() != c.want {
			t.Errorf("%s:\n got %q\nwant %q", c.url, err, c.want)
		}
		if strings.Contains(err.Error(), "SECRET") || strings.Contains(err.Error(), "U0VD") || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: the error %q shows a secret or spans lines", c.url, err)
		}
	}
}
