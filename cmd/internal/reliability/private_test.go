package reliability

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// privatePIDsOf lists the live private store processes (wc-store serving
// one command) of storeDir.
func privatePIDsOf(storeDir string) []int {
	want := []byte("WC_STORE_PRIVATE=" + storeDir)
	return residentPIDsWhere(func(kv []byte) bool { return bytes.Equal(kv, want) })
}

// TestPrivateStoreProcessOrphaned: a command killed alone (by the OOM
// killer, or a parent that kills by pid) while its private store process
// waits for the store's lock takes that process with it, instead of
// leaving it to wait out the command's lock timeout and then write into
// the store for nobody.
func TestPrivateStoreProcessOrphaned(t *testing.T) {
	r := newRunner(t, filepath.Join(t.TempDir(), "store")).direct().withEnv("WC_LOCK_TIMEOUT=2m")
	r.must(nil, "wc-new", "--title", "before")
	lock, err := os.OpenFile(filepath.Join(r.store, "lock"), os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	p := r.start(nil, "wc-new", "--title", "orphaned")
	var child []int
	for deadline := time.Now().Add(30 * time.Second); len(child) == 0; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("no private store process started")
		}
		child = privatePIDsOf(r.store)
	}
	time.Sleep(100 * time.Millisecond) // into its wait for the lock
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	// Well within the lock timeout, with the lock still held. (Waiting
	// for the command first would wait for the pipes it shares with the
	// private process.)
	waitExit(t, child[0], "its command was killed")
	if res := p.wait(); !res.Killed {
		t.Fatalf("the command was not killed: %v", res)
	}
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_UN); err != nil {
		t.Fatal(err)
	}
	out := r.must(nil, "wc-ls")
	if strings.Contains(out, "orphaned") || !strings.Contains(out, "before") {
		t.Errorf("after the kill the store lists:\n%s", out)
	}
}
