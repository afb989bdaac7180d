// Package textindex holds the word index of stored messages: the
// tokenizer, the codec of an index segment (a term-major inverted index of
// a set of messages, with positions), the two query languages that read it
// (wc-ls --grep's substring, planned as word fragments; wc-ls --search's
// words, "phrases" and prefix*), and BM25 ranking.
//
// It is pure: it imports the model (package session) and the standard
// library's text packages, never os, a clock or the store. The store
// (package store) decides which messages a segment holds, where its bytes
// live and when segments are folded and merged; see docs/search.md.
package textindex
