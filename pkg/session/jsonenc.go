package session

import (
	"bytes"
	"math"
	"strconv"
	"unicode/utf8"
)

// The writers below emit JSON the way serde_json does: no HTML escaping and
// non-ASCII left as is, so documents stay byte-compatible with whycodes and
// readable in a terminal.

const hexDigits = "0123456789abcdef"

// appendString appends s as a JSON string. Invalid UTF-8 becomes U+FFFD;
// input is validated upstream, so that only guards against misuse.
func appendString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' && c < utf8.RuneSelf {
			i++
			continue
		}
		if c < utf8.RuneSelf {
			dst = appendEscapedByte(append(dst, s[start:i]...), c)
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, "\ufffd"...)
			i++
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// AppendString appends s as a JSON string, as every session document
// writes strings: no HTML escaping, non-ASCII as it is.
func AppendString(dst []byte, s string) []byte { return appendString(dst, s) }

// stringJSONLen is len(appendString(nil, s)), without making it: a text
// that is mostly control characters (a file of NULs) grows sixfold.
func stringJSONLen(s string) int {
	n := 2
	var scratch [8]byte
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c >= 0x20 && c != '"' && c != '\\' && c < utf8.RuneSelf:
			n++
			i++
		case c < utf8.RuneSelf:
			n += len(appendEscapedByte(scratch[:0], c))
			i++
		default:
			r, size := utf8.DecodeRuneInString(s[i:])
			if r == utf8.RuneError && size == 1 {
				n += len("\ufffd") // what appendString writes for it
			} else {
				n += size
			}
			i += size
		}
	}
	return n
}

// appendEscapedByte appends an ASCII byte a JSON string must escape: a
// quote, a backslash or a control character (or, for encoding/json's
// HTML-safe form, <, > or &, which fall to \u00XX).
func appendEscapedByte(dst []byte, c byte) []byte {
	switch c {
	case '"', '\\':
		return append(dst, '\\', c)
	case '\n':
		return append(dst, '\\', 'n')
	case '\r':
		return append(dst, '\\', 'r')
	case '\t':
		return append(dst, '\\', 't')
	case '\b':
		return append(dst, '\\', 'b')
	case '\f':
		return append(dst, '\\', 'f')
	}
	return append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
}

// AppendEscapedByte is appendEscapedByte for the record package's writer
// of encoding/json's bytes.
func AppendEscapedByte(dst []byte, c byte) []byte { return appendEscapedByte(dst, c) }

func appendKey(dst []byte, first bool, key string) []byte {
	if !first {
		dst = append(dst, ',')
	}
	dst = appendString(dst, key)
	return append(dst, ':')
}

func appendUint(dst []byte, v uint64) []byte { return strconv.AppendUint(dst, v, 10) }

func appendBool(dst []byte, v bool) []byte { return strconv.AppendBool(dst, v) }

// appendFloat writes a float the way serde_json (ryu) does: the shortest
// round-trip digits, plain decimal notation for 1e-5 <= |v| < 1e16 with at
// least one fractional digit ("3.0"), scientific notation with a bare
// exponent ("1e-7", "1.5e16") outside it, and null for NaN and infinities.
func appendFloat(dst []byte, v float64) []byte {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return append(dst, "null"...)
	}
	if v == 0 {
		if math.Signbit(v) {
			return append(dst, "-0.0"...)
		}
		return append(dst, "0.0"...)
	}
	var tmp [32]byte
	e := strconv.AppendFloat(tmp[:0], v, 'e', -1, 64) // [-]d[.ddd]e±XX
	if e[0] == '-' {
		dst = append(dst, '-')
		e = e[1:]
	}
	mant, exp, _ := bytes.Cut(e, []byte{'e'})
	var digits []byte
	digits = append(digits, mant[0])
	if len(mant) > 2 {
		digits = append(digits, mant[2:]...)
	}
	x, _ := strconv.Atoi(string(exp))
	length := len(digits)
	kk := x + 1 // 10^(kk-1) <= |v| < 10^kk
	switch {
	case length <= kk && kk <= 16: // 1234e7 -> 12340000000.0
		dst = append(dst, digits...)
		for i := length; i < kk; i++ {
			dst = append(dst, '0')
		}
		return append(dst, '.', '0')
	case 0 < kk && kk <= 16: // 1234e-2 -> 12.34
		dst = append(dst, digits[:kk]...)
		dst = append(dst, '.')
		return append(dst, digits[kk:]...)
	case -5 < kk && kk <= 0: // 1234e-6 -> 0.001234
		dst = append(dst, '0', '.')
		for i := kk; i < 0; i++ {
			dst = append(dst, '0')
		}
		return append(dst, digits...)
	}
	dst = append(dst, digits[0])
	if length > 1 {
		dst = append(dst, '.')
		dst = append(dst, digits[1:]...)
	}
	dst = append(dst, 'e')
	return strconv.AppendInt(dst, int64(kk-1), 10)
}

// AppendJSONStrings appends ss as a JSON array of strings, as the rest of a
// session's JSON writes strings.
func AppendJSONStrings(dst []byte, ss []string) []byte {
	dst = append(dst, '[')
	for i, s := range ss {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendString(dst, s)
	}
	return append(dst, ']')
}

// replaceLoneSurrogates rewrites, in place, every \uD800–\uDFFF escape of
// JSON text that is not half of a surrogate pair as \ufffd (the same
// length). Outside strings valid JSON has no backslash, so escapes are
// found by walking backslash to backslash.
func replaceLoneSurrogates(b []byte) []byte {
	for i := bytes.IndexByte(b, '\\'); i >= 0 && i+1 < len(b); {
		if b[i+1] != 'u' {
			i = nextBackslash(b, i+2)
			continue
		}
		r, ok := hexEscape(b, i)
		switch {
		case !ok:
			i = nextBackslash(b, i+2)
			continue
		case r >= 0xd800 && r < 0xdc00:
			if low, ok := hexEscape(b, i+6); ok && low >= 0xdc00 && low < 0xe000 {
				i = nextBackslash(b, i+12)
				continue
			}
			copy(b[i+2:], "fffd")
		case r >= 0xdc00 && r < 0xe000:
			copy(b[i+2:], "fffd")
		}
		i = nextBackslash(b, i+6)
	}
	return b
}

func nextBackslash(b []byte, from int) int {
	if from >= len(b) {
		return -1
	}
	if j := bytes.IndexByte(b[from:], '\\'); j >= 0 {
		return from + j
	}
	return -1
}

// hexEscape reads the \uXXXX escape at b[i], if there is one.
func hexEscape(b []byte, i int) (rune, bool) {
	if i+6 > len(b) || b[i] != '\\' || b[i+1] != 'u' {
		return 0, false
	}
	var r rune
	for _, c := range b[i+2 : i+6] {
		switch {
		case c >= '0' && c <= '9':
			r = r<<4 | rune(c-'0')
		case c >= 'a' && c <= 'f':
			r = r<<4 | rune(c-'a'+10)
		case c >= 'A' && c <= 'F':
			r = r<<4 | rune(c-'A'+10)
		default:
			return 0, false
		}
	}
	return r, true
}
