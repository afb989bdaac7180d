// Package kvtest is the conformance suite of kv.Engine: what every engine
// must do for the store's logic to hold on it (Run). It drives an engine
// through the interface alone, so it runs over any of them.
package kvtest
