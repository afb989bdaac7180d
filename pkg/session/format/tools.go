package format

import (
	"fmt"

	"github.com/tidwall/gjson"

	"github.com/wctoolkit/wc/pkg/session"
)

// CheckTools refuses tool definitions a request body could not carry: not
// valid JSON, nested past session.MaxJSONDepth, not an array, or an
// element that is not a definition: an object (OpenAI's may wrap it in
// "function") with a non-empty string "name", a string "description" if
// any, and an object schema ("parameters" or "input_schema") if any.
func CheckTools(data []byte) error {
	if err := session.CheckNesting(data); err != nil {
		return err
	}
	if !gjson.ValidBytes(data) {
		return fmt.Errorf("invalid JSON")
	}
	v := gjson.ParseBytes(data)
	if !v.IsArray() {
		return fmt.Errorf("not a JSON array of tool definitions")
	}
	var err error
	i := 0
	v.ForEach(func(_, t gjson.Result) bool {
		i++
		if !t.IsObject() {
			err = fmt.Errorf("tool %d is %s, not an object", i, kindOf(t))
			return false
		}
		if f := t.Get("function"); f.IsObject() {
			t = f
		}
		if name := t.Get("name"); name.Type != gjson.String || name.Str == "" {
			err = fmt.Errorf(`tool %d has no "name"`, i)
			return false
		}
		if d := t.Get("description"); d.Exists() && d.Type != gjson.String {
			err = fmt.Errorf(`tool %d: "description" must be a string`, i)
			return false
		}
		for _, key := range []string{"parameters", "input_schema"} {
			if s := t.Get(key); s.Exists() && !s.IsObject() {
				err = fmt.Errorf(`tool %d: %q must be an object (a JSON Schema)`, i, key)
				return false
			}
		}
		return true
	})
	return err
}
