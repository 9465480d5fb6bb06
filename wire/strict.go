package wire

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"
)

// checkDocument refuses what encoding/json would alter: a key given twice
// (case aside), invalid UTF-8 and a number no float64 holds.
func checkDocument(data []byte) error {
	bad := invalidUTF8(data)
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var w walker
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return nil // malformed: the decoding says how
		}
		if bad >= 0 && dec.InputOffset() > int64(bad) {
			return fmt.Errorf("%w: %s is not valid UTF-8", ErrBadInput, w.where())
		}
		if err := w.token(tok); err != nil {
			return err
		}
	}
}

// walker follows a token stream's place: the containers open around it.
type walker struct {
	stack []*frame
	// key: the next token is an object's key (or its end).
	key bool
}

type frame struct {
	object bool
	name   string // the container's own path ("" for the document)
	cur    string // an object's current key
	index  int    // an array's current index
	seen   map[string]bool
}

// path is the place of the value the next token starts.
func (w *walker) path() string {
	if len(w.stack) == 0 {
		return "the document"
	}
	f := w.stack[len(w.stack)-1]
	if f.object {
		return join(f.name, f.cur)
	}
	return fmt.Sprintf("%s[%d]", f.name, f.index)
}

// where names the place of the token just read, for an error.
func (w *walker) where() string {
	if w.key {
		if n := w.stack[len(w.stack)-1].name; n != "" {
			return "a key of " + n
		}
		return "a key"
	}
	return w.path()
}

func (w *walker) token(tok json.Token) error {
	if w.key {
		f := w.stack[len(w.stack)-1]
		if d, ok := tok.(json.Delim); ok && d == '}' {
			w.close()
			return nil
		}
		k, _ := tok.(string)
		if f.seen[strings.ToLower(k)] {
			return fmt.Errorf("%w: %s is given twice (a key may appear once)", ErrBadInput, join(f.name, k))
		}
		f.seen[strings.ToLower(k)] = true
		f.cur, w.key = k, false
		return nil
	}
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '{':
			w.stack = append(w.stack, &frame{object: true, name: w.childName(), seen: map[string]bool{}})
			w.key = true
		case '[':
			w.stack = append(w.stack, &frame{name: w.childName()})
		case ']':
			w.close()
		}
		return nil
	case json.Number:
		if f, err := strconv.ParseFloat(string(t), 64); err != nil && (math.IsInf(f, 0) || errors.Is(err, strconv.ErrRange)) {
			return fmt.Errorf("%w: %s: %s is not a number a float64 holds (it would read back as %g)", ErrOverLimit, w.path(), t, f)
		}
	}
	w.next()
	return nil
}

// childName is the path of a container opening here.
func (w *walker) childName() string {
	if len(w.stack) == 0 {
		return ""
	}
	return w.path()
}

// close ends the innermost container, a value of the one around it.
func (w *walker) close() {
	w.stack = w.stack[:len(w.stack)-1]
	w.key = false
	w.next()
}

// next moves past a value: to an object's next key or an array's next index.
func (w *walker) next() {
	if len(w.stack) == 0 {
		return
	}
	f := w.stack[len(w.stack)-1]
	if f.object {
		w.key = true
	} else {
		f.index++
	}
}

func join(name, key string) string {
	if name == "" {
		return key
	}
	return name + "." + key
}

// invalidUTF8 is the offset of the first invalid UTF-8 or lone-surrogate escape, or -1.
func invalidUTF8(data []byte) int {
	for i := 0; i < len(data); {
		r, size := utf8.DecodeRune(data[i:])
		if r == utf8.RuneError && size == 1 {
			return i
		}
		if data[i] == '\\' && i+1 < len(data) {
			if data[i+1] == 'u' && i+6 <= len(data) {
				if v, err := strconv.ParseUint(string(data[i+2:i+6]), 16, 16); err == nil && v >= 0xd800 && v <= 0xdfff {
					// A high surrogate followed by a low one is one rune.
					if v <= 0xdbff && i+12 <= len(data) && data[i+6] == '\\' && data[i+7] == 'u' {
						if w, err := strconv.ParseUint(string(data[i+8:i+12]), 16, 16); err == nil && w >= 0xdc00 && w <= 0xdfff {
							i += 12
							continue
						}
					}
					return i
				}
			}
			i += 2
			continue
		}
		i += size
	}
	return -1
}
