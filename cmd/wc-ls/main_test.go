package main

import (
	"testing"

	"github.com/wctoolkit/wc/cmd/internal/tooltest"
)

func TestMain(m *testing.M) { tooltest.Main(m) }

func TestScripts(t *testing.T) { tooltest.RunScripts(t, "testdata") }

func TestManPage(t *testing.T) { tooltest.CheckManPage(t, &spec) }
