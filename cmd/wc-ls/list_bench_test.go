package main

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/wctoolkit/wc/pkg/session"
)

// benchMetas are n sessions as a store lists them (in key order, that is
// in no time order), updated over 90 days in whole seconds.
func benchMetas(n int) []session.Meta {
	start := time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)
	metas := make([]session.Meta, n)
	for i := range metas {
		t := start.Add(time.Duration(i*7919%(90*24*3600)) * time.Second)
		metas[i] = session.Meta{ID: fmt.Sprintf("%08x-0000-4000-8000-%012x", i*2654435761%(1<<32), i),
			Title: "fix the flaky login test", ProjectPath: fmt.Sprintf("/home/dev/src/project%02d", i%20),
			CreatedAt: session.FormatTime(t.Add(-time.Hour)), UpdatedAt: session.FormatTime(t), MessageCount: uint64(i % 200)}
	}
	return metas
}

// What wc-ls does between reading the store and printing: filter, sort by
// update time (each comparison parses two RFC 3339 times), cut to -n 50,
// and encode the rows.
func BenchmarkListSort(b *testing.B) {
	metas := benchMetas(10000)
	order, err := sortOrder("updated")
	if err != nil {
		b.Fatal(err)
	}
	work := make([]session.Meta, len(metas))
	b.Run("sort-updated-10000", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			copy(work, metas)
			slices.SortStableFunc(work, order)
		}
	})
	b.Run("filter-project-10000", func(b *testing.B) {
		f := filter{project: "/home/dev/src/project07"}
		for b.Loop() {
			kept := 0
			for i := range metas {
				if f.keep(&metas[i]) {
					kept++
				}
			}
			if kept != 500 {
				b.Fatal(kept)
			}
		}
	})
	b.Run("cmpTime", func(b *testing.B) {
		x, y := metas[1].UpdatedAt, metas[2].UpdatedAt
		for b.Loop() {
			cmpTime(x, y)
		}
	})
}
