package rawjson

// Structured values (a guard map's member) are read by a loop with a stack of its own, so that no nesting
// depth exhausts the guest's stack.

// Leaf is one scalar (or empty container) of a structured value: Key is the member names from the top
// down to it joined with "." (array elements add no name), Text its value when that is a string.
type Leaf struct {
	Key      string
	Text     string
	IsString bool
}

// EachLeaf calls fn with every leaf of raw, one valid JSON value, whose own key is prefix, until fn
// returns false. Keys and strings are unescaped.
func EachLeaf(raw, prefix string, fn func(Leaf) bool) {
	type frame struct {
		object bool
		keyLen int // the key's length when the container was entered
		empty  bool
	}
	key := append(make([]byte, 0, len(prefix)+64), prefix...)
	var stack []frame
	expectKey := false
	emit := func(text string, isString bool) bool {
		if n := len(stack); n > 0 {
			stack[n-1].empty = false
		}
		return fn(Leaf{Key: string(key), Text: text, IsString: isString})
	}
	for i := 0; i < len(raw); {
		c := raw[i]
		switch {
		case IsSpace(c) || c == ':':
			i++
		case c == ',':
			expectKey = len(stack) > 0 && stack[len(stack)-1].object
			i++
		case c == '{' || c == '[':
			if n := len(stack); n > 0 {
				stack[n-1].empty = false
			}
			stack = append(stack, frame{object: c == '{', keyLen: len(key), empty: true})
			expectKey = c == '{'
			i++
		case c == '}' || c == ']':
			f := stack[len(stack)-1]
			key = key[:f.keyLen]
			stack = stack[:len(stack)-1]
			if f.empty && !fn(Leaf{Key: string(key)}) {
				return
			}
			i++
		case c == '"':
			end, escaped := StringEnd(raw, i)
			s := StringValue(raw[i:end], escaped)
			i = end
			if expectKey {
				top := &stack[len(stack)-1]
				top.empty = false
				key = key[:top.keyLen]
				if len(key) > 0 {
					key = append(key, '.')
				}
				key = append(key, s...)
				expectKey = false
				continue
			}
			if !emit(s, true) {
				return
			}
		default:
			i = ScalarEnd(raw, i)
			if !emit("", false) {
				return
			}
		}
	}
}
