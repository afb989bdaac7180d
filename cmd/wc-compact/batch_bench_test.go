package main

import (
	"bytes"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wctoolkit/wc/cmd/internal/command"
	"github.com/wctoolkit/wc/internal/bench/gen"
	"github.com/wctoolkit/wc/pkg/session/store/badgerkv"
	"github.com/wctoolkit/wc/pkg/session/store/kv"
)

// The benchmark's compaction row in process: wc-compact --all
// --max-tokens 100000 over 1,000 generated sessions (wcbench gen
// -sessions 1000 -seed 1, 64 MB of message JSON), each run on a fresh
// copy of the store; then again over the compacted copy, the cron job's
// batch with nothing to do. Profile with -cpuprofile and -memprofile.
// The ceiling row does no work on the same bytes: it reads every key of
// every session, a transaction per session, as the batch reads them.
func BenchmarkBatch(b *testing.B) {
	dir := b.TempDir()
	orig := filepath.Join(dir, "orig")
	gc := gen.NewConfig()
	gc.Sessions, gc.Seed, gc.WCDir, gc.Progress = 1000, 1, orig, io.Discard
	sum, err := gen.Generate(&gc)
	if err != nil {
		b.Fatal(err)
	}
	b.Setenv("WC_DIRECT", "1")
	args := func(store string) []string {
		return []string{"wc-compact", "--store", store, "--all", "--max-tokens", "100000"}
	}
	run := func(b *testing.B, store string, changed int) {
		var out, errs bytes.Buffer
		if code := command.Run(&spec, args(store), strings.NewReader(""), &out, &errs); code != 0 {
			b.Fatalf("exit %d: %s", code, errs.String())
		}
		if n := bytes.Count(out.Bytes(), []byte(`"changed":true`)); changed >= 0 && n != changed {
			b.Fatalf("%d sessions changed, want %d", n, changed)
		}
	}
	fresh := func(b *testing.B, to string) {
		if err := os.MkdirAll(filepath.Dir(to), 0o700); err != nil {
			b.Fatal(err)
		}
		if out, err := exec.Command("cp", "-a", orig, to).CombinedOutput(); err != nil {
			b.Fatalf("cp: %v: %s", err, out)
		}
	}
	b.Run("compact", func(b *testing.B) {
		b.SetBytes(sum.JSONBytes)
		i := 0
		for b.Loop() {
			b.StopTimer()
			store := filepath.Join(dir, "compact", strings.Repeat("x", i%4+1))
			i++
			if out, err := exec.Command("rm", "-rf", store).CombinedOutput(); err != nil {
				b.Fatalf("rm: %v: %s", err, out)
			}
			fresh(b, store)
			b.StartTimer()
			run(b, store, -1)
		}
	})
	b.Run("ceiling/read", func(b *testing.B) {
		eng, err := badgerkv.Open(badgerkv.Config{Dir: filepath.Join(orig, "db"), ReadOnly: true, Bulk: true})
		if err != nil {
			b.Fatal(err)
		}
		defer eng.Close()
		b.SetBytes(sum.JSONBytes)
		for b.Loop() {
			copySessions(b, eng, nil)
		}
	})
	b.Run("compacted", func(b *testing.B) {
		store := filepath.Join(dir, "compacted")
		fresh(b, store)
		run(b, store, -1)
		b.SetBytes(sum.JSONBytes)
		for b.Loop() {
			run(b, store, 0)
		}
	})
}

// copySessions reads every session's keys, one transaction a session (a
// session's keys share their first 17 bytes), and writes them to dst, a
// commit a session, unless dst is nil. (A listing shard's range is over
// one transaction's limit: a copy must split it.)
func copySessions(b *testing.B, src, dst kv.Engine) {
	const sessionKey = 17
	var start []byte
	for {
		var keys, vals [][]byte
		err := src.View(func(txn kv.Txn) error {
			it := txn.Iterate(kv.IterOptions{})
			defer it.Close()
			for it.Seek(start); it.Valid(); it.Next() {
				k := it.Key()
				if len(keys) > 0 && (len(k) < sessionKey || !bytes.Equal(k[:sessionKey], keys[0][:sessionKey])) {
					start = bytes.Clone(k)
					return nil
				}
				v, err := it.Value()
				if err != nil {
					return err
				}
				keys, vals = append(keys, bytes.Clone(k)), append(vals, bytes.Clone(v))
				if len(k) < sessionKey {
					start = append(bytes.Clone(k), 0)
					return nil
				}
			}
			start = nil
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
		if dst != nil && len(keys) > 0 {
			if err := dst.Update(func(txn kv.Txn) error {
				for i := range keys {
					if err := txn.Set(keys[i], vals[i]); err != nil {
						return err
					}
				}
				return nil
			}); err != nil {
				b.Fatal(err)
			}
		}
		if start == nil {
			return
		}
	}
}
