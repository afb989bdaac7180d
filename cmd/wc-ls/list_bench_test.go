package main

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/wctoolkit/wc/pkg/session"
)

// benchInfos are n sessions as the store lists them, updated over 90 days
// in whole seconds and created an hour before.
func benchInfos(n int) []session.Info {
	start := time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)
	infos := make([]session.Info, n)
	for i := range infos {
		t := start.Add(time.Duration(i*7919%(90*24*3600)) * time.Second)
		infos[i] = session.Info{ID: fmt.Sprintf("%08x-0000-4000-8000-%012x", i*2654435761%(1<<32), i),
			Title: "fix the flaky login test", ProjectPath: fmt.Sprintf("/home/dev/src/project%02d", i%20),
			CreatedAt: session.FormatTime(t.Add(-time.Hour)), UpdatedAt: session.FormatTime(t), MessageCount: uint64(i % 200)}
	}
	return infos
}

// What wc-ls does for --sort created between reading the store and
// printing: sort every session (each comparison parses two RFC 3339
// times). The default order, by update, is the store's and needs no sort
// (pkg/session/store BenchmarkListInfo).
func BenchmarkListSort(b *testing.B) {
	infos := benchInfos(10000)
	order, err := sortOrder("created")
	if err != nil {
		b.Fatal(err)
	}
	work := make([]session.Info, len(infos))
	b.Run("sort-created-10000", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			copy(work, infos)
			slices.SortFunc(work, func(a, b session.Info) int {
				if r := order(&a, &b); r != 0 {
					return r
				}
				return strings.Compare(a.ID, b.ID)
			})
		}
	})
	b.Run("cmpTime", func(b *testing.B) {
		x, y := infos[1].UpdatedAt, infos[2].UpdatedAt
		for b.Loop() {
			cmpTime(x, y)
		}
	})
}
