package wirecheck

import (
	"fmt"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// node is one parsed JSON value that keeps what encoding/json forgets:
// member order, duplicate members, a number's text and whether a string
// held a lone surrogate escape.
type node struct {
	kind    byte // 'n' null, 'b' bool, '0' number, 's' string, 'a' array, 'o' object
	b       bool
	num     string
	str     string
	lone    bool
	items   []*node
	members []member
}

type member struct {
	key     string
	keyLone bool
	val     *node
}

// get returns the last member named key (as most JSON parsers do), or nil.
func (n *node) get(key string) *node {
	if n == nil {
		return nil
	}
	var v *node
	for _, m := range n.members {
		if m.key == key {
			v = m.val
		}
	}
	return v
}

func (n *node) isString() bool { return n != nil && n.kind == 's' }

// s is the text of a string node, or "".
func (n *node) s() string {
	if !n.isString() {
		return ""
	}
	return n.str
}

func (n *node) describe() string {
	if n == nil {
		return "nothing"
	}
	switch n.kind {
	case 'n':
		return "null"
	case 'b':
		return "a boolean"
	case '0':
		return "a number"
	case 's':
		return "a string"
	case 'a':
		return "an array"
	}
	return "an object"
}

func parseJSON(data []byte) (*node, error) {
	p := &parser{b: data}
	p.space()
	v, err := p.value()
	if err != nil {
		return nil, err
	}
	p.space()
	if p.i != len(p.b) {
		return nil, p.errorf("trailing characters")
	}
	return v, nil
}

type parser struct {
	b []byte
	i int
}

func (p *parser) errorf(format string, args ...any) error {
	return fmt.Errorf("byte %d: %s", p.i, fmt.Sprintf(format, args...))
}

func (p *parser) space() {
	for p.i < len(p.b) && (p.b[p.i] == ' ' || p.b[p.i] == '\t' || p.b[p.i] == '\n' || p.b[p.i] == '\r') {
		p.i++
	}
}

func (p *parser) lit(word string) bool {
	if len(p.b)-p.i >= len(word) && string(p.b[p.i:p.i+len(word)]) == word {
		p.i += len(word)
		return true
	}
	return false
}

func (p *parser) value() (*node, error) {
	if p.i >= len(p.b) {
		return nil, p.errorf("unexpected end")
	}
	switch c := p.b[p.i]; {
	case c == 'n' && p.lit("null"):
		return &node{kind: 'n'}, nil
	case c == 't' && p.lit("true"):
		return &node{kind: 'b', b: true}, nil
	case c == 'f' && p.lit("false"):
		return &node{kind: 'b'}, nil
	case c == '"':
		s, lone, err := p.str()
		return &node{kind: 's', str: s, lone: lone}, err
	case c == '-' || c >= '0' && c <= '9':
		start := p.i
		for p.i < len(p.b) && (p.b[p.i] == '-' || p.b[p.i] == '+' || p.b[p.i] == '.' || p.b[p.i] == 'e' || p.b[p.i] == 'E' || p.b[p.i] >= '0' && p.b[p.i] <= '9') {
			p.i++
		}
		return &node{kind: '0', num: string(p.b[start:p.i])}, nil
	case c == '[':
		p.i++
		n := &node{kind: 'a'}
		p.space()
		if p.i < len(p.b) && p.b[p.i] == ']' {
			p.i++
			return n, nil
		}
		for {
			p.space()
			v, err := p.value()
			if err != nil {
				return nil, err
			}
			n.items = append(n.items, v)
			p.space()
			switch {
			case p.i < len(p.b) && p.b[p.i] == ',':
				p.i++
			case p.i < len(p.b) && p.b[p.i] == ']':
				p.i++
				return n, nil
			default:
				return nil, p.errorf("expected , or ]")
			}
		}
	case c == '{':
		p.i++
		n := &node{kind: 'o'}
		p.space()
		if p.i < len(p.b) && p.b[p.i] == '}' {
			p.i++
			return n, nil
		}
		for {
			p.space()
			if p.i >= len(p.b) || p.b[p.i] != '"' {
				return nil, p.errorf("key must be a string")
			}
			k, lone, err := p.str()
			if err != nil {
				return nil, err
			}
			p.space()
			if p.i >= len(p.b) || p.b[p.i] != ':' {
				return nil, p.errorf("expected :")
			}
			p.i++
			p.space()
			v, err := p.value()
			if err != nil {
				return nil, err
			}
			n.members = append(n.members, member{key: k, keyLone: lone, val: v})
			p.space()
			switch {
			case p.i < len(p.b) && p.b[p.i] == ',':
				p.i++
			case p.i < len(p.b) && p.b[p.i] == '}':
				p.i++
				return n, nil
			default:
				return nil, p.errorf("expected , or }")
			}
		}
	}
	return nil, p.errorf("expected a value")
}

// str reads a string; lone reports an escape of half a surrogate pair.
func (p *parser) str() (string, bool, error) {
	p.i++ // the quote
	// Most strings have no escape: their text is the input's.
	end := p.i
	for end < len(p.b) && p.b[end] != '"' && p.b[end] != '\\' && p.b[end] >= 0x20 {
		end++
	}
	if end < len(p.b) && p.b[end] == '"' {
		s := string(p.b[p.i:end])
		p.i = end + 1
		return s, false, nil
	}
	var out []byte
	lone := false
	for {
		if p.i >= len(p.b) {
			return "", false, p.errorf("unterminated string")
		}
		c := p.b[p.i]
		switch {
		case c == '"':
			p.i++
			return string(out), lone, nil
		case c < 0x20:
			return "", false, p.errorf("control character in string")
		case c != '\\':
			j := p.i + 1
			for j < len(p.b) && p.b[j] != '"' && p.b[j] != '\\' && p.b[j] >= 0x20 {
				j++
			}
			out = append(out, p.b[p.i:j]...)
			p.i = j
			continue
		}
		if p.i+1 >= len(p.b) {
			return "", false, p.errorf("unterminated escape")
		}
		e := p.b[p.i+1]
		p.i += 2
		switch e {
		case '"', '\\', '/':
			out = append(out, e)
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		case 'u':
			r, err := p.hex4()
			if err != nil {
				return "", false, err
			}
			if utf16.IsSurrogate(r) {
				if r < 0xdc00 && p.i+1 < len(p.b) && p.b[p.i] == '\\' && p.b[p.i+1] == 'u' {
					save := p.i
					p.i += 2
					if low, err := p.hex4(); err == nil && low >= 0xdc00 && low < 0xe000 {
						out = utf8.AppendRune(out, utf16.DecodeRune(r, low))
						continue
					}
					p.i = save
				}
				lone = true
				r = utf8.RuneError
			}
			out = utf8.AppendRune(out, r)
		default:
			return "", false, p.errorf("bad escape \\%c", e)
		}
	}
}

func (p *parser) hex4() (rune, error) {
	if p.i+4 > len(p.b) {
		return 0, p.errorf("short \\u escape")
	}
	v, err := strconv.ParseUint(string(p.b[p.i:p.i+4]), 16, 32)
	if err != nil {
		return 0, p.errorf("bad \\u escape")
	}
	p.i += 4
	return rune(v), nil
}
