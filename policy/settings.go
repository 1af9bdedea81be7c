package policy

import (
	"bytes"
	"errors"
	"regexp"
	"strconv"
	"strings"
	"unsafe"

	"github.com/mailru/easyjson/jlexer"
	"github.com/tidwall/gjson"
)

// Setting values as docs/rules.md "Settings" defines them.
const (
	ModeReplace = "replace"
	ModeReject  = "reject"

	defaultLegacyUserLabel = "yunikorn.apache.org/username"
)

// defaultSystemUsers are anchored, unlike the design's `system:serviceaccount:kube-system:*`, which also
// matches `system:serviceaccount:kube-system-evil:sa` (a namespace anybody may be able to create).
var defaultSystemUsers = []string{"^system:serviceaccount:kube-system:", "^system:kube-controller-manager$"}

// settingsKeys lists the valid keys in the order the README documents them; unknown keys are rejected so
// that a typo cannot silently disable a control.
const settingsKeys = "bypassAuth, bypassControllers, systemUsers, externalUsers, externalGroups, onUntrustedAnnotation, legacyUserLabel"

// rawSettings is the settings object as written by the user. Every field records its own type problem
// instead of failing the decoder, so validation can name the key (and list index) of every mistake.
//
//easyjson:json
type rawSettings struct {
	BypassAuth            flagSetting    `json:"bypassAuth"`
	BypassControllers     flagSetting    `json:"bypassControllers"`
	SystemUsers           patternSetting `json:"systemUsers"`
	ExternalUsers         patternSetting `json:"externalUsers"`
	ExternalGroups        patternSetting `json:"externalGroups"`
	OnUntrustedAnnotation textSetting    `json:"onUntrustedAnnotation"`
	LegacyUserLabel       textSetting    `json:"legacyUserLabel"`
}

// Settings is the validated configuration. Regexes are compiled on first use only: a fresh wasm instance
// serves every request, and most requests (a pod without the annotation) never need them.
type Settings struct {
	BypassAuth            bool
	BypassControllers     bool
	SystemUsers           Patterns
	ExternalUsers         Patterns
	ExternalGroups        Patterns
	OnUntrustedAnnotation string
	LegacyUserLabel       string
}

// Patterns is a list of Go RE2 regexes matched unanchored, like upstream YuniKorn (MatchString).
type Patterns struct {
	sources  []string
	matchers []matcher
}

// matcher matches one pattern: by string comparison when the pattern is a plain literal between an optional
// ^ and $ (the defaults are), else with the regex, compiled when it is first reached. Compiling a regex
// costs more than the whole rest of a decision in a fresh wasm instance, and policy-server pays it on every
// request: a list stops at its first match, so later patterns are never compiled.
type matcher struct {
	literal    string
	start, end bool   // anchored at ^ / $
	src        string // a regex, when not a literal
	re         *regexp.Regexp
	broken     bool // does not compile: CheckSettings refused it at start-up; it matches nobody
}

// MatchString reports whether any pattern matches s.
func (p *Patterns) MatchString(s string) bool {
	if p.matchers == nil && len(p.sources) > 0 {
		p.matchers = make([]matcher, len(p.sources))
		for i, src := range p.sources {
			if m, ok := literalMatcher(src); ok {
				p.matchers[i] = m
			} else {
				p.matchers[i] = matcher{src: src}
			}
		}
	}
	for i := range p.matchers {
		if p.matchers[i].match(s) {
			return true
		}
	}
	return false
}

func (m *matcher) match(s string) bool {
	switch {
	case m.src != "":
		if m.re == nil && !m.broken {
			re, err := regexp.Compile(m.src)
			m.re, m.broken = re, err != nil
		}
		return !m.broken && m.re.MatchString(s)
	case m.start && m.end:
		return s == m.literal
	case m.start:
		return strings.HasPrefix(s, m.literal)
	case m.end:
		return strings.HasSuffix(s, m.literal)
	}
	return strings.Contains(s, m.literal)
}

// literalMatcher recognises patterns without regex syntax apart from a leading ^ and a trailing $. In RE2
// without flags, ^ and $ match only at the start and the end of the text, so string comparison is exact.
func literalMatcher(src string) (matcher, bool) {
	var m matcher
	if strings.HasPrefix(src, "^") {
		m.start, src = true, src[1:]
	}
	if strings.HasSuffix(src, "$") {
		m.end, src = true, src[:len(src)-1]
	}
	if src == "" || strings.ContainsAny(src, `\.+*?()|[]{}^$`) {
		return matcher{}, false
	}
	m.literal = src
	return m, true
}

// Len is the number of patterns.
func (p *Patterns) Len() int { return len(p.sources) }

// ParseSettings decodes a settings object and checks everything but the regexes' syntax (see
// CheckSettings). The message names every problem found, each with its key (and list index), joined by "; ".
func ParseSettings(data []byte) (Settings, string) {
	s, problems := parseSettings(data)
	return s, strings.Join(problems, "; ")
}

// CheckSettings is ParseSettings plus the compilation of every regex: what validate_settings answers.
func CheckSettings(data []byte) (Settings, string) {
	s, problems := parseSettings(data)
	problem := func(key, msg string) { problems = append(problems, key+": "+msg) }
	s.SystemUsers.compileProblems("systemUsers", problem)
	s.ExternalUsers.compileProblems("externalUsers", problem)
	s.ExternalGroups.compileProblems("externalGroups", problem)
	return s, strings.Join(problems, "; ")
}

func parseSettings(data []byte) (Settings, []string) {
	s := Settings{
		BypassControllers:     true,
		SystemUsers:           Patterns{sources: defaultSystemUsers},
		OnUntrustedAnnotation: ModeReplace,
		LegacyUserLabel:       defaultLegacyUserLabel,
	}
	if trimmed := bytes.TrimSpace(data); len(trimmed) == 0 || string(trimmed) == "{}" {
		return s, nil // the common case: nothing to decode
	}
	// Unknown keys first: easyjson skips a member whose value is null before it looks at the key, and a
	// typo must not pass because its value happens to be null.
	if unknown := unknownSettingsKey(data); unknown != "" {
		return s, []string{"unknown key " + strconv.Quote(unknown) + ": valid keys are " + settingsKeys}
	}
	var raw rawSettings
	lexer := jlexer.Lexer{Data: data}
	raw.UnmarshalEasyJSON(&lexer)
	if err := lexer.Error(); err != nil {
		return s, []string{settingsSyntaxProblem(err)}
	}

	var problems []string
	problem := func(key, msg string) { problems = append(problems, key+": "+msg) }

	raw.BypassAuth.apply(&s.BypassAuth, "bypassAuth", problem)
	raw.BypassControllers.apply(&s.BypassControllers, "bypassControllers", problem)
	raw.SystemUsers.apply(&s.SystemUsers, "systemUsers", problem)
	raw.ExternalUsers.apply(&s.ExternalUsers, "externalUsers", problem)
	raw.ExternalGroups.apply(&s.ExternalGroups, "externalGroups", problem)
	raw.OnUntrustedAnnotation.apply(&s.OnUntrustedAnnotation, "onUntrustedAnnotation", problem)
	raw.LegacyUserLabel.apply(&s.LegacyUserLabel, "legacyUserLabel", problem)

	if raw.OnUntrustedAnnotation.problem == "" &&
		s.OnUntrustedAnnotation != ModeReplace && s.OnUntrustedAnnotation != ModeReject {
		problem("onUntrustedAnnotation", strconv.Quote(s.OnUntrustedAnnotation)+
			` is not a valid mode: use "replace" (stamp the requester over an untrusted value) or "reject"`)
	}
	if s.BypassAuth && s.ExternalUsers.Len() == 0 && s.ExternalGroups.Len() == 0 &&
		raw.ExternalUsers.problem == "" && raw.ExternalGroups.problem == "" {
		problem("bypassAuth", "is true but externalUsers and externalGroups are both empty, so it would trust "+
			"nobody: add the users or groups allowed to supply the annotation, or set bypassAuth to false")
	}
	return s, problems
}

// unknownSettingsKey returns the first key of the settings object that is not a setting.
func unknownSettingsKey(data []byte) string {
	unknown := ""
	gjson.Parse(unsafe.String(unsafe.SliceData(data), len(data))).ForEach(func(key, _ gjson.Result) bool {
		switch key.Str {
		case "bypassAuth", "bypassControllers", "systemUsers", "externalUsers", "externalGroups",
			"onUntrustedAnnotation", "legacyUserLabel":
			return true
		}
		unknown = key.Str
		return false
	})
	return unknown
}

// settingsSyntaxProblem explains a decoder failure: an unknown key, or JSON that is not an object.
func settingsSyntaxProblem(err error) string {
	var lexErr *jlexer.LexerError
	if errors.As(err, &lexErr) && lexErr.Reason == "unknown field" {
		return "unknown key " + strconv.Quote(lexErr.Data) + ": valid keys are " + settingsKeys
	}
	return "settings must be a JSON object with the keys " + settingsKeys + ": " + err.Error()
}

// flagSetting is a boolean setting; null or absent means the default.
type flagSetting struct {
	set     bool
	value   bool
	problem string
}

// UnmarshalEasyJSON records a wrong type instead of stopping the decoder.
func (f *flagSetting) UnmarshalEasyJSON(in *jlexer.Lexer) {
	switch in.CurrentToken() {
	case jlexer.TokenNull:
		in.Skip()
	case jlexer.TokenBool:
		f.set, f.value = true, in.Bool()
	default:
		f.problem = "must be true or false, not " + tokenDescription(in)
		in.SkipRecursive()
	}
}

func (f *flagSetting) apply(dst *bool, key string, problem func(key, msg string)) {
	if f.problem != "" {
		problem(key, f.problem)
	} else if f.set {
		*dst = f.value
	}
}

// textSetting is a string setting; null or absent means the default.
type textSetting struct {
	set     bool
	value   string
	problem string
}

// UnmarshalEasyJSON records a wrong type instead of stopping the decoder.
func (t *textSetting) UnmarshalEasyJSON(in *jlexer.Lexer) {
	switch in.CurrentToken() {
	case jlexer.TokenNull:
		in.Skip()
	case jlexer.TokenString:
		t.set, t.value = true, in.String()
	default:
		t.problem = "must be a string, not " + tokenDescription(in)
		in.SkipRecursive()
	}
}

func (t *textSetting) apply(dst *string, key string, problem func(key, msg string)) {
	if t.problem != "" {
		problem(key, t.problem)
	} else if t.set {
		*dst = t.value
	}
}

// patternSetting is a list of regexes; a single string is a list of one, null or absent means the default.
type patternSetting struct {
	set     bool
	values  []string
	problem string
}

// UnmarshalEasyJSON records a wrong type instead of stopping the decoder.
func (p *patternSetting) UnmarshalEasyJSON(in *jlexer.Lexer) {
	switch {
	case in.CurrentToken() == jlexer.TokenNull:
		in.Skip()
	case in.CurrentToken() == jlexer.TokenString:
		p.set, p.values = true, []string{in.String()}
	case in.IsDelim('['):
		p.set, p.values = true, []string{}
		in.Delim('[')
		for i := 0; !in.IsDelim(']') && in.Ok(); i++ {
			if in.CurrentToken() == jlexer.TokenString {
				p.values = append(p.values, in.String())
			} else {
				if p.problem == "" {
					p.problem = "item " + strconv.Itoa(i) + " must be a string (a regular expression), not " +
						tokenDescription(in)
				}
				in.SkipRecursive()
			}
			in.WantComma()
		}
		in.Delim(']')
	default:
		p.problem = "must be a list of regular expressions (or one as a string), not " + tokenDescription(in)
		in.SkipRecursive()
	}
}

func (p *patternSetting) apply(dst *Patterns, key string, problem func(key, msg string)) {
	if p.problem != "" {
		problem(key, p.problem)
		return
	}
	if !p.set {
		return
	}
	for i, src := range p.values {
		if src == "" {
			problem(key+"["+strconv.Itoa(i)+"]",
				`the empty pattern "" matches every user: remove it, or anchor a real pattern such as "^name$"`)
		}
	}
	*dst = Patterns{sources: p.values}
}

// compileProblems reports every pattern that is not a valid RE2 regex. Only validate_settings calls it:
// policy-server refuses to start with invalid settings, so validate compiles lazily and only what it uses.
func (p *Patterns) compileProblems(key string, problem func(key, msg string)) {
	for i, src := range p.sources {
		if _, err := regexp.Compile(src); err != nil {
			problem(key+"["+strconv.Itoa(i)+"]", "invalid regular expression "+strconv.Quote(src)+": "+err.Error())
		}
	}
}

// tokenDescription names the JSON type of the lexer's current token for error messages.
func tokenDescription(in *jlexer.Lexer) string {
	switch in.CurrentToken() {
	case jlexer.TokenString:
		return "a string"
	case jlexer.TokenNumber:
		return "a number"
	case jlexer.TokenBool:
		return "a boolean"
	case jlexer.TokenNull:
		return "null"
	}
	if in.IsDelim('[') {
		return "a list"
	}
	if in.IsDelim('{') {
		return "an object"
	}
	return "malformed JSON"
}
