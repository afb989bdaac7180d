// Package sessioncheck runs wirecheck's models over a wc session, for the
// tests of every package that makes sessions (fixtures imported, generated
// sessions, fuzz inputs): every request body of every path passes the
// provider's rules, the share loads in whycodes with what it should keep,
// and importing the share makes the same tree.
//
// Only tests import it. It imports wirecheck, the model and its request
// bodies (pkg/session, pkg/session/request).
package sessioncheck
