// Package storetest is the contract of store.Handle as one suite of
// tests, run over every way a command reaches the store: the store opened
// in the process, the resident store process's client and a private store
// process's client (and, later, every engine). A behaviour a command relies
// on is tested here once, so that no way of opening the store can differ.
package storetest
