package main

import (
	"os"
	"testing"

	"github.com/wctoolkit/wc/cmd/internal/tooltest"
)

func TestMain(m *testing.M) { os.Exit(tooltest.Main(m)) }

func TestScripts(t *testing.T) { tooltest.RunScripts(t, "testdata") }

func TestManPage(t *testing.T) { tooltest.CheckManPage(t, &spec) }

// Shell completion offers every verb, and only verbs.
func TestCompletionVerbs(t *testing.T) {
	offered := map[string]bool{}
	for _, v := range spec.Complete.Verbs {
		offered[v[0]] = true
		if _, ok := verbs[v[0]]; !ok {
			t.Errorf("completion offers %q, which is no verb", v[0])
		}
	}
	for name := range verbs {
		if !offered[name] {
			t.Errorf("completion does not offer the verb %q", name)
		}
	}
}
