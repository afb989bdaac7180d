package session

// DecodeStored lets the external tests hold the fast decoder of stored
// messages to DecodeMessage.
var DecodeStored = decodeStored

// StoredMessage lets the external tests hold the markdown written straight
// from stored JSON to Message's.
func (mw *MarkdownWriter) StoredMessage(raw []byte) (bool, error) { return mw.storedMessage(raw) }
