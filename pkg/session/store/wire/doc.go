// Package wire is the protocol between a store process (wc-store) and its
// clients: length-prefixed frames (Conn), the hello and welcome that open a
// connection, one request type per operation, the response, and errors as
// they cross the socket, by kind.
//
// It imports the model (package session) and the store's API (package
// store) only: it knows nothing of sockets, processes or Badger.
package wire
