package main

import (
	"os"
	"testing"

	"github.com/wctoolkit/wc/cmd/internal/tooltest"
)

func TestMain(m *testing.M) { os.Exit(tooltest.Main(m)) }

func TestScripts(t *testing.T) { tooltest.RunScripts(t, "testdata") }

func TestManPage(t *testing.T) { tooltest.CheckManPage(t, &spec) }
