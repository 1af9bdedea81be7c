package walk

// Problem is bad input a walk met: what it is (Fault), the concrete path of the value or map it concerns
// (At, from the walker's Field on) and the key it concerns, if any. The rules word it: a walker states
// facts, policy/messages.go turns them into the refusal.
type Problem struct {
	Fault   Fault
	At, Key string
}

// Fault is the kind of a Problem.
type Fault uint8

// The faults a walk reports; NoFault is none.
const (
	NoFault       Fault = iota
	DuplicateKey        // Key occurs more than once in the object at At
	NotAnObject         // the value at At must be an object
	NotAStringMap       // the value at At, the last segment of a target path, must be an object of strings
	NoPodTemplate       // the value at At, on a required path (a built-in kind's), is missing or not an object
	NotAString          // the entry Key of the map at At must be a string
	TooManyMaps         // one path names more maps than Walker.Most
	NotIndexed          // the value at At is not in the document Walker.Index indexes (the caller's mistake)
)

// Found reports whether p is a problem: the zero Problem is none.
func (p Problem) Found() bool { return p.Fault != NoFault }
