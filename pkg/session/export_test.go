package session

// DecodeStored lets the external tests hold the fast decoder of stored
// messages to DecodeMessage.
var DecodeStored = decodeStored
