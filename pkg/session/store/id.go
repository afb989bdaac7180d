package store

import "encoding/hex"

// IDLen is the length of a session id in bytes (a UUID).
const IDLen = 16

// ID is a session id as the store keys it.
type ID [IDLen]byte

// String is the id in its canonical UUID form.
func (id ID) String() string {
	var b [36]byte
	hex.Encode(b[0:8], id[0:4])
	b[8] = '-'
	hex.Encode(b[9:13], id[4:6])
	b[13] = '-'
	hex.Encode(b[14:18], id[6:8])
	b[18] = '-'
	hex.Encode(b[19:23], id[8:10])
	b[23] = '-'
	hex.Encode(b[24:36], id[10:16])
	return string(b[:])
}

// RefDigits strips dashes and lowercases; ok is false for any non-hex byte.
func RefDigits(ref string) (string, bool) {
	out := make([]byte, 0, 32)
	for i := 0; i < len(ref); i++ {
		c := ref[i]
		switch {
		case c == '-':
		case c >= '0' && c <= '9', c >= 'a' && c <= 'f':
			out = append(out, c)
		case c >= 'A' && c <= 'F':
			out = append(out, c+('a'-'A'))
		default:
			return "", false
		}
	}
	return string(out), true
}

// ParseID accepts a full id in any case, with or without dashes.
func ParseID(ref string) (ID, error) {
	var id ID
	digits, ok := RefDigits(ref)
	if !ok || len(digits) != 2*IDLen {
		return id, &RefError{Ref: ref}
	}
	if _, err := hex.Decode(id[:], []byte(digits)); err != nil {
		return id, &RefError{Ref: ref}
	}
	return id, nil
}
