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

// SettingsKeys lists the valid keys in the order the README documents them; unknown keys are rejected so
// that a typo cannot silently disable a control. rawSettings has a field for each (a test checks).
var SettingsKeys = [...]string{"bypassAuth", "bypassControllers", "systemUsers", "externalUsers", "externalGroups",
	"onUntrustedAnnotation", "legacyUserLabel", "customWorkloads", "honorLegacyUserLabel"}

// Limits of the module's regular expression compiler: TinyGo's stack is small, and Go's regexp parser and
// compiler recurse once per nesting level, so a deeper pattern traps the guest (a trap in validate_settings
// stops policy-server from starting). Settings validation checks both before compiling.
const (
	maxPatternBytes    = 1024
	maxPatternNesting  = 32
	maxPatternBytesStr = "1,024"
)

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
	CustomWorkloads       rawJSON        `json:"customWorkloads"`
	HonorLegacyUserLabel  flagSetting    `json:"honorLegacyUserLabel"`
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
	// LegacyUserLabel is the legacy label in effect: "" when legacy handling is off, by legacyUserLabel ""
	// or by honorLegacyUserLabel false.
	LegacyUserLabel string
	// customWorkloads is the setting's JSON text, parsed by CustomWorkloads (validate_settings) or, for the
	// request's kind only, by customKind: most requests are of the table's kinds and never need it.
	customWorkloads string
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
			// parseSettings refused a pattern over the limits, but compiling one would trap: never try.
			m.broken = patternLimitProblem(m.src) != ""
			if !m.broken {
				re, err := regexp.Compile(m.src)
				m.re, m.broken = re, err != nil
			}
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

// ParseSettings decodes a settings object and checks everything but the regexes' syntax and customWorkloads
// (see CheckSettings). The message names every problem found, each with its key (and list index), joined by "; ".
func ParseSettings(data []byte) (Settings, string) {
	s, problems := parseSettings(data)
	return s, strings.Join(problems, "; ")
}

// CheckSettings is ParseSettings plus the compilation of every regex and the parse of every declared kind's
// paths: what validate_settings answers.
func CheckSettings(data []byte) (Settings, string) {
	s, problems := parseSettings(data)
	_, customProblems := s.CustomWorkloads()
	problems = append(problems, customProblems...)
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
	if problem := unknownSettingsKey(data); problem != "" {
		return s, []string{problem}
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
	s.customWorkloads = raw.CustomWorkloads.text
	honorLegacy := true
	raw.HonorLegacyUserLabel.apply(&honorLegacy, "honorLegacyUserLabel", problem)
	if raw.LegacyUserLabel.problem == "" && s.LegacyUserLabel != "" {
		if why := labelKeyProblem(s.LegacyUserLabel); why != "" {
			problem("legacyUserLabel", strconv.Quote(s.LegacyUserLabel)+" is not a valid label key ("+why+
				`): a typo would silently switch off the label's protection; give a key such as "yunikorn.apache.org/username", `+
				`or set honorLegacyUserLabel to false to turn legacy handling off`)
		}
	}
	if !honorLegacy {
		s.LegacyUserLabel = "" // rules 2, 5 and 9 then ignore the label, as with legacyUserLabel ""
	}

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

// unknownSettingsKey explains the first key of the settings object that is not a setting, or that occurs
// twice.
func unknownSettingsKey(data []byte) string {
	problem := ""
	var seen [len(SettingsKeys)]bool
	settings := gjson.Parse(unsafe.String(unsafe.SliceData(data), len(data)))
	if !settings.IsObject() {
		return "" // the decoder explains what it is instead
	}
	settings.ForEach(func(key, _ gjson.Result) bool {
		for i, name := range SettingsKeys {
			if key.Str == name {
				if seen[i] {
					// JSON readers disagree on which copy counts.
					problem = "the key " + strconv.Quote(name) + " occurs more than once: give each setting once"
					return false
				}
				seen[i] = true
				return true
			}
		}
		problem = unknownKey(key.Str)
		return false
	})
	return problem
}

func unknownKey(key string) string {
	return "unknown key " + strconv.Quote(key) + ": valid keys are " + strings.Join(SettingsKeys[:], ", ")
}

// settingsSyntaxProblem explains a decoder failure: an unknown key, or JSON that is not an object.
func settingsSyntaxProblem(err error) string {
	var lexErr *jlexer.LexerError
	if errors.As(err, &lexErr) && lexErr.Reason == "unknown field" {
		return unknownKey(lexErr.Data)
	}
	return "settings must be a JSON object with the keys " + strings.Join(SettingsKeys[:], ", ") + ": " + err.Error()
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

// patternSetting is a list of regexes; null or absent means the default. A single string is read the way
// YuniKorn reads its own setting, so that a value copied from YuniKorn's configuration means the same here:
// split at commas, each item trimmed of white space (strings.TrimSpace, as YuniKorn does), empty items
// dropped (" " and "," are empty lists, not patterns trusting every name with a space or a comma). Items
// of a real list are never split: a comma there is part of the regex.
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
		p.set, p.values = true, splitPatterns(in.String())
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
		p.problem = "must be a list of regular expressions (or one string of them separated by commas), not " +
			tokenDescription(in)
		in.SkipRecursive()
	}
}

// splitPatterns reads a single string of patterns as YuniKorn does.
func splitPatterns(list string) []string {
	values := []string{}
	for _, item := range strings.Split(list, ",") {
		if item = strings.TrimSpace(item); item != "" {
			values = append(values, item)
		}
	}
	return values
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
		if why := patternLimitProblem(src); why != "" {
			problem(key+"["+strconv.Itoa(i)+"]", why)
		}
	}
	*dst = Patterns{sources: p.values}
}

// patternLimitProblem refuses, without compiling it, a pattern the module's regex compiler cannot take, and
// the empty pattern. It is cheap, so the validate path runs it too.
func patternLimitProblem(src string) string {
	switch {
	case src == "":
		return `the empty pattern "" matches every user: remove it, or anchor a real pattern such as "^name$"`
	case len(src) > maxPatternBytes:
		return "the pattern is " + strconv.Itoa(len(src)) + " bytes long, over the limit of " + maxPatternBytesStr +
			" bytes: shorten it, or split it into several patterns"
	}
	if depth := groupNesting(src); depth > maxPatternNesting {
		return "the pattern nests groups " + strconv.Itoa(depth) + " deep, over the limit of " +
			strconv.Itoa(maxPatternNesting) + ": flatten it, or split it into several patterns"
	}
	return ""
}

// groupNesting is how deep the pattern's groups nest, counting as RE2 parses: an escaped parenthesis, one
// inside a character class or inside \Q...\E is a literal. It errs on the side of counting.
func groupNesting(src string) int {
	depth, deepest := 0, 0
	for i := 0; i < len(src); i++ {
		switch src[i] {
		case '\\':
			if i+1 < len(src) && src[i+1] == 'Q' {
				end := strings.Index(src[i+2:], `\E`)
				if end < 0 {
					return deepest // the rest is literal
				}
				i += 2 + end + 1
				continue
			}
			i++ // the escaped character
		case '[':
			i = classEnd(src, i)
		case '(':
			depth++
			deepest = max(deepest, depth)
		case ')':
			if depth > 0 {
				depth--
			}
		}
	}
	return deepest
}

// classEnd returns the index of the "]" that closes the character class opened at i (or the end of src).
func classEnd(src string, i int) int {
	j := i + 1
	if j < len(src) && src[j] == '^' {
		j++
	}
	if j < len(src) && src[j] == ']' {
		j++ // a leading ] is a literal
	}
	for ; j < len(src); j++ {
		switch {
		case src[j] == '\\':
			j++
		case src[j] == '[' && j+1 < len(src) && src[j+1] == ':':
			if end := strings.Index(src[j+2:], ":]"); end >= 0 {
				j += 2 + end + 1
			}
		case src[j] == ']':
			return j
		}
	}
	return len(src)
}

// compileProblems reports every pattern that is not a valid RE2 regex or that matches the empty string
// (matched anywhere in a name, such a pattern matches every name). Only validate_settings calls it:
// policy-server refuses to start with invalid settings, so validate compiles lazily and only what it uses.
// Patterns over the limits were reported by apply and are not compiled.
func (p *Patterns) compileProblems(key string, problem func(key, msg string)) {
	for i, src := range p.sources {
		if patternLimitProblem(src) != "" {
			continue
		}
		re, err := regexp.Compile(src)
		switch {
		case err != nil:
			problem(key+"["+strconv.Itoa(i)+"]", "invalid regular expression "+strconv.Quote(src)+": "+err.Error())
		case re.MatchString(""):
			problem(key+"["+strconv.Itoa(i)+"]", "the pattern "+strconv.Quote(src)+" matches the empty string, so it "+
				`matches every name (patterns match anywhere in a name): anchor a real name, such as "^name$"`)
		}
	}
}

// labelKeyProblem explains why key is not a Kubernetes label key ([prefix/]name), or returns "".
func labelKeyProblem(key string) string {
	prefix, name, hasPrefix := strings.Cut(key, "/")
	if !hasPrefix {
		prefix, name = "", key
	}
	switch {
	case hasPrefix && prefix == "":
		return "the prefix before / is empty"
	case len(prefix) > 253:
		return "the prefix is longer than 253 characters"
	case hasPrefix && !dnsSubdomain(prefix):
		return "the prefix must be a DNS subdomain: lower-case letters, digits, '-' and '.', starting and ending with a letter or digit"
	case name == "":
		return "the name is empty"
	case len(name) > 63:
		return "the name is longer than 63 characters"
	case !labelName(name):
		return "the name must consist of letters, digits, '-', '_' or '.', and start and end with a letter or digit"
	}
	return ""
}

func dnsSubdomain(s string) bool {
	for _, part := range strings.Split(s, ".") {
		if part == "" || part[0] == '-' || part[len(part)-1] == '-' {
			return false
		}
		for i := range len(part) {
			if c := part[i]; (c < 'a' || c > 'z') && !isDigit(c) && c != '-' {
				return false
			}
		}
	}
	return true
}

func labelName(s string) bool {
	alnum := func(c byte) bool { return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || isDigit(c) }
	if !alnum(s[0]) || !alnum(s[len(s)-1]) {
		return false
	}
	for i := range len(s) {
		if c := s[i]; !alnum(c) && c != '-' && c != '_' && c != '.' {
			return false
		}
	}
	return true
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
