package etcdkv

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/url"
	"os"
	"strings"
	"time"
)

// Config is what Open needs to reach a cluster and which part of its key
// space is the store's.
type Config struct {
	Endpoints []string // host:port of each member
	// Prefix names the store inside the cluster (the URL's path without
	// its leading slash); several stores share one cluster under
	// different prefixes.
	Prefix   string
	Username string
	Password string // from WC_STORE_PASSWORD only, never from the URL
	// TLS is nil for plain connections.
	TLS            *tls.Config
	DialTimeout    time.Duration // reaching a member at Open
	RequestTimeout time.Duration // each request, each page of an iterator, the commit
}

// Default timeouts. A request waits no longer than RequestTimeout for a
// member with a leader; the store's own retries (bounded by
// --lock-timeout) ride out an election, which takes about a second.
const (
	DefaultDialTimeout    = 5 * time.Second
	DefaultRequestTimeout = 5 * time.Second
)

// PasswordEnv is the environment variable the password is read from: a
// store URL is shown in errors, process lists and shell histories, so it
// never carries one.
const PasswordEnv = "WC_STORE_PASSWORD"

// Scheme is the URL scheme of a store on etcd.
const Scheme = "etcd"

// maxPrefixBytes bounds the prefix every key carries, so that the keys'
// share of a request stays within the headroom Limits leave.
const maxPrefixBytes = 128

// queryParams are the parameters a store URL takes; anything else is
// refused, so that a misspelt cacert is not a silently plain connection.
var queryParams = map[string]string{
	"cacert":       "the CA certificate file that signs the members' certificates (implies TLS)",
	"cert":         "the client certificate file (with key; implies TLS)",
	"key":          "the client certificate's key file (with cert)",
	"tls":          "1 for TLS with the system's CA certificates",
	"server-name":  "the name the members' certificates are checked against",
	"user":         "the etcd user (its password from " + PasswordEnv + ")",
	"timeout":      "each request's timeout (a Go duration, default 5s)",
	"dial-timeout": "the timeout to reach a member (default 5s)",
}

// IsURL tells a store argument naming an etcd store from a directory.
func IsURL(store string) bool { return strings.HasPrefix(store, Scheme+"://") }

// ParseURL reads etcd://HOST:PORT[,HOST:PORT…]/PREFIX[?PARAMS] into a
// Config, taking the password from getenv(PasswordEnv) when a user is
// given. Its errors name the part of the URL that is wrong, never a
// secret: a password in the URL is refused without being repeated.
func ParseURL(raw string, getenv func(string) string) (Config, error) {
	if !IsURL(raw) {
		return Config{}, errors.New("an etcd store is named etcd://HOST:PORT[,HOST:PORT…]/PREFIX")
	}
	rest := strings.TrimPrefix(raw, Scheme+"://")
	if i := strings.IndexAny(rest, "/?#"); i >= 0 && strings.Contains(rest[:i], "@") || i < 0 && strings.Contains(rest, "@") {
		return Config{}, errors.New("an etcd store URL takes no user or password before its hosts: give user=NAME and the password in " + PasswordEnv)
	}
	hosts, pathQuery, _ := strings.Cut(rest, "/")
	if strings.ContainsAny(hosts, "?#") {
		return Config{}, errors.New("an etcd store URL needs a /PREFIX after its hosts")
	}
	cfg := Config{DialTimeout: DefaultDialTimeout, RequestTimeout: DefaultRequestTimeout}
	for _, h := range strings.Split(hosts, ",") {
		host, port, err := net.SplitHostPort(h)
		if err != nil || host == "" || port == "" {
			return Config{}, fmt.Errorf("an etcd store URL's hosts are HOST:PORT, separated by commas (not %q)", h)
		}
		cfg.Endpoints = append(cfg.Endpoints, h)
	}
	path, rawQuery, _ := strings.Cut(pathQuery, "?")
	if strings.Contains(path, "#") {
		return Config{}, errors.New("an etcd store URL has no #fragment")
	}
	prefix, err := url.PathUnescape(path)
	if err != nil {
		return Config{}, fmt.Errorf("an etcd store URL's prefix does not decode: %v", err)
	}
	if err := checkPrefix(prefix); err != nil {
		return Config{}, err
	}
	cfg.Prefix = prefix
	q, err := url.ParseQuery(rawQuery)
	if err != nil {
		return Config{}, errors.New("an etcd store URL's parameters do not decode")
	}
	for name, vals := range q {
		if _, ok := queryParams[name]; !ok {
			return Config{}, fmt.Errorf("an etcd store URL takes no parameter %q (it takes %s)", name, paramNames())
		}
		if len(vals) != 1 {
			return Config{}, fmt.Errorf("an etcd store URL's parameter %s is given %d times", name, len(vals))
		}
	}
	for _, p := range []struct {
		name string
		to   *time.Duration
	}{{"timeout", &cfg.RequestTimeout}, {"dial-timeout", &cfg.DialTimeout}} {
		if v := q.Get(p.name); v != "" {
			d, err := time.ParseDuration(v)
			if err != nil || d <= 0 {
				return Config{}, fmt.Errorf("an etcd store URL's %s is a positive duration such as 5s (not %q)", p.name, v)
			}
			*p.to = d
		}
	}
	if cfg.Username = q.Get("user"); cfg.Username != "" {
		cfg.Password = getenv(PasswordEnv)
		if cfg.Password == "" {
			return Config{}, fmt.Errorf("the etcd user %s needs its password in %s", cfg.Username, PasswordEnv)
		}
	}
	if cfg.TLS, err = tlsConfig(q); err != nil {
		return Config{}, err
	}
	return cfg, nil
}

func paramNames() string {
	return "cacert, cert, key, tls, server-name, user, timeout, dial-timeout"
}

// checkPrefix refuses a prefix that is empty, too long, or not made of
// slash-separated names of letters, digits, '.', '_' and '-': the prefix
// is the store's name in errors and in etcd's permissions.
func checkPrefix(p string) error {
	if p == "" {
		return errors.New("an etcd store URL needs a /PREFIX naming the store in the cluster")
	}
	if len(p) > maxPrefixBytes {
		return fmt.Errorf("an etcd store's prefix is at most %d bytes", maxPrefixBytes)
	}
	for _, seg := range strings.Split(p, "/") {
		if seg == "" || seg == "." || seg == ".." {
			return fmt.Errorf("an etcd store's prefix is names separated by single slashes (not %q)", p)
		}
		for _, r := range seg {
			if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-') {
				return fmt.Errorf("an etcd store's prefix holds only letters, digits, '.', '_', '-' and '/' (not %q)", p)
			}
		}
	}
	return nil
}

// tlsConfig builds the client's TLS from the URL's parameters. Its errors
// name the parameter and the file, never the file's content.
func tlsConfig(q url.Values) (*tls.Config, error) {
	ca, cert, key, name := q.Get("cacert"), q.Get("cert"), q.Get("key"), q.Get("server-name")
	switch q.Get("tls") {
	case "", "0":
		if ca == "" && cert == "" && key == "" && name == "" {
			return nil, nil
		}
	case "1":
	default:
		return nil, errors.New("an etcd store URL's tls is 1 or 0")
	}
	c := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: name}
	if ca != "" {
		pem, err := os.ReadFile(ca)
		if err != nil {
			return nil, fmt.Errorf("cannot read the etcd CA certificate (cacert): %v", fileErr(err))
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("the etcd CA certificate %s (cacert) holds no PEM certificate", ca)
		}
		c.RootCAs = pool
	}
	if (cert == "") != (key == "") {
		return nil, errors.New("an etcd store URL gives cert and key together")
	}
	if cert != "" {
		pair, err := tls.LoadX509KeyPair(cert, key)
		if err != nil {
			var pe *fs.PathError
			if errors.As(err, &pe) {
				return nil, fmt.Errorf("cannot read the etcd client certificate (cert, key): %v", fileErr(err))
			}
			return nil, fmt.Errorf("the etcd client certificate %s and key %s are not a PEM certificate and its private key", cert, key)
		}
		c.Certificates = []tls.Certificate{pair}
	}
	return c, nil
}

// fileErr is a file error's path and cause, without the operation.
func fileErr(err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Path + ": " + pe.Err.Error()
	}
	return err.Error()
}

// String is the store's name as errors and outputs show it: the endpoints
// and the prefix, and the user when there is one; never the password or
// the certificates.
func (c Config) String() string {
	s := Scheme + "://" + strings.Join(c.Endpoints, ",") + "/" + c.Prefix
	if c.Username != "" {
		s += "?user=" + url.QueryEscape(c.Username)
	}
	return s
}
