package main

import (
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wctoolkit/wc/cmd/internal/command"
	"github.com/wctoolkit/wc/pkg/session"
	"github.com/wctoolkit/wc/pkg/session/store/kvstore"
)

// One whole wc-append run inside this process: parse the flags, open the
// store read-write, append one message, close (flattening level 0 every
// eighth run) and print. What a separate process pays on top of this is
// exec and the Go runtime's start (scripts/bench.sh times both).
func BenchmarkRunAppend(b *testing.B) {
	for _, sessions := range []int{1, 10000} {
		b.Run(fmt.Sprintf("sessions=%d", sessions), func(b *testing.B) {
			dir := filepath.Join(b.TempDir(), "store")
			st, err := kvstore.Open(kvstore.Options{Dir: dir}, kvstore.Write)
			if err != nil {
				b.Fatal(err)
			}
			now := time.Date(2026, 8, 21, 12, 0, 0, 0, time.UTC)
			pad := strings.Repeat("x", 1000)
			var target string
			for i := range sessions {
				id := fmt.Sprintf("%08x-0000-4000-8000-%012x", i, i)
				m := session.New(id, "/home/dev/src/app", "", now)
				var msgs []session.Message
				for j := range 10 {
					msgs = append(msgs, session.Message{Role: session.RoleUser, Content: session.TextContent(fmt.Sprintf("m%d %s", j, pad))})
				}
				res := session.Append(&m, nil, msgs, now, nil, session.AppendOptions{})
				if err := st.Commit(&m, res.Nodes); err != nil {
					b.Fatal(err)
				}
				target = id
			}
			if err := st.Close(); err != nil {
				b.Fatal(err)
			}
			args := []string{"wc-append", "--store", dir, target, "--role", "user", "--text", "please fix the failing login test"}
			for b.Loop() {
				if code := command.Run(&spec, args, strings.NewReader(""), io.Discard, io.Discard); code != 0 {
					b.Fatal("exit", code)
				}
			}
		})
	}
}
