// Package render writes sessions for people: the markdown export, the
// plain-text transcript, and whycodes' exit summary, from decoded messages
// only.
//
// It imports the model (package session) and nothing of the store.
package render
