package policy

import (
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/seed-a6d343df/yunikorn-user-info-policy/policy/internal/rawjson"
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

// settingsTable is the one description of the settings, in docs/rules.md "Settings" order: each key, the
// field it sets (whose Go type is the JSON type it takes) and its check.
var settingsTable = [...]settingRow{
	{key: "bypassAuth", field: func(d *settingsDraft) any { return &d.BypassAuth }},
	{key: "bypassControllers", field: func(d *settingsDraft) any { return &d.BypassControllers }},
	{key: "systemUsers", field: func(d *settingsDraft) any { return &d.SystemUsers }},
	{key: "externalUsers", field: func(d *settingsDraft) any { return &d.ExternalUsers }},
	{key: "externalGroups", field: func(d *settingsDraft) any { return &d.ExternalGroups }},
	{key: "onUntrustedAnnotation", field: func(d *settingsDraft) any { return &d.OnUntrustedAnnotation }, check: modeProblem},
	{key: "legacyUserLabel", field: func(d *settingsDraft) any { return &d.LegacyUserLabel }, check: legacyLabelProblem},
	{key: "customWorkloads", field: func(d *settingsDraft) any { return &d.customWorkloads }},
	{key: "honorLegacyUserLabel", field: func(d *settingsDraft) any { return &d.honorLegacyUserLabel }},
	{key: "logDecisions", field: func(d *settingsDraft) any { return &d.LogDecisions }},
}

// settingRow is one setting: its key, the field its value is stored in, and its check ("" when fine).
type settingRow struct {
	key   string
	field func(*settingsDraft) any
	check func(*settingsDraft) string
}

// settingsDraft is Settings while it is read, with the settings that only shape others.
type settingsDraft struct {
	Settings
	honorLegacyUserLabel bool
}

// jsonText is a setting kept as its JSON text and parsed only where it is used (customWorkloads).
type jsonText string

// defaultSettings is what an absent or null setting means.
func defaultSettings() settingsDraft {
	return settingsDraft{
		Settings: Settings{
			BypassControllers:     true,
			SystemUsers:           Patterns{sources: defaultSystemUsers},
			OnUntrustedAnnotation: ModeReplace,
			LegacyUserLabel:       defaultLegacyUserLabel,
		},
		honorLegacyUserLabel: true,
	}
}

// SettingsKeys lists the valid keys, in the table's order.
var SettingsKeys = func() (keys [len(settingsTable)]string) {
	for i, row := range settingsTable {
		keys[i] = row.key
	}
	return keys
}()

func modeProblem(d *settingsDraft) string {
	if d.OnUntrustedAnnotation == ModeReplace || d.OnUntrustedAnnotation == ModeReject {
		return ""
	}
	return strconv.Quote(d.OnUntrustedAnnotation) +
		` is not a valid mode: use "replace" (stamp the requester over an untrusted value) or "reject"`
}

func legacyLabelProblem(d *settingsDraft) string {
	if d.LegacyUserLabel == "" {
		return "" // legacy handling off
	}
	why := labelKeyProblem(d.LegacyUserLabel)
	if why == "" {
		return ""
	}
	return strconv.Quote(d.LegacyUserLabel) + " is not a valid label key (" + why +
		`): a typo would silently switch off the label's protection; give a key such as "yunikorn.apache.org/username", ` +
		`or set honorLegacyUserLabel to false to turn legacy handling off`
}

// Limits of the module's regular expression compiler, checked before compiling: a deeper pattern traps the
// guest (docs/runtime.md "Regular expressions").
const (
	maxPatternBytes    = 1024
	maxPatternNesting  = 32
	maxPatternBytesStr = "1,024"
)

// Settings is the validated configuration; regexes are compiled on first use only.
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
	// customWorkloads is the setting's JSON text, parsed by CustomWorkloads, or for one kind by customKind.
	customWorkloads jsonText
	// LogDecisions: decisions that need no warning log a debug line too (docs/runtime.md "Logs").
	LogDecisions bool
}

// Patterns is a list of Go RE2 regexes matched unanchored, like upstream YuniKorn (MatchString).
type Patterns struct {
	sources  []string
	matchers []matcher
}

// matcher matches one pattern: by string comparison when it is a literal between an optional ^ and $ (the
// defaults are), else with the regex, compiled when first reached (docs/runtime.md "Regular expressions").
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

// literalMatcher recognises patterns without regex syntax apart from a leading ^ and a trailing $ (which,
// in RE2 without flags, match only at the text's start and end).
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

// ParseSettings decodes a settings object and checks all but the regexes' syntax and customWorkloads. The
// message names every problem with its key, joined by "; ". The Settings are views of text.
func ParseSettings(text string) (Settings, string) {
	s, problems := parseSettings(text)
	return s, strings.Join(problems, "; ")
}

// CheckSettings is ParseSettings of a validate_settings payload, plus every regex compiled and every
// declared kind parsed. The Settings are views of data, which must not be written while they are in use.
func CheckSettings(data []byte) (Settings, string) {
	s, problems := parseSettings(rawjson.View(data))
	_, customProblems := s.CustomWorkloads()
	problems = append(problems, customProblems...)
	problem := func(key, msg string) { problems = append(problems, key+": "+msg) }
	s.SystemUsers.compileProblems("systemUsers", problem)
	s.ExternalUsers.compileProblems("externalUsers", problem)
	s.ExternalGroups.compileProblems("externalGroups", problem)
	return s, strings.Join(problems, "; ")
}

func parseSettings(text string) (Settings, []string) {
	d := defaultSettings()
	if trimmed := strings.TrimSpace(text); trimmed == "" || trimmed == "{}" {
		return d.Settings, nil // the common case: nothing to read
	}
	if !rawjson.Valid(text) {
		return d.Settings, []string{notSettings("it is not valid JSON")}
	}
	settings := gjson.Parse(text)
	switch {
	case settings.Type == gjson.Null:
		return d.Settings, nil // as {}: no setting given
	case !settings.IsObject():
		return d.Settings, []string{notSettings("it is " + jsonTypeName(settings))}
	}

	// An unknown or repeated key is the only problem reported: the author may mean something else by the rest.
	var values [len(settingsTable)]gjson.Result
	problem := ""
	settings.ForEach(func(key, value gjson.Result) bool {
		i := slices.Index(SettingsKeys[:], key.Str)
		switch {
		case i < 0:
			problem = unknownKey(key.Str)
		case values[i].Exists():
			problem = keyTwice(key.Str) + ": give each setting once"
		default:
			values[i] = value
		}
		return problem == ""
	})
	if problem != "" {
		return d.Settings, []string{problem}
	}

	var problems []string
	for i, row := range settingsTable {
		if values[i].Type != gjson.Null { // absent or null: the default
			problems = readSetting(&d, row, values[i], problems)
		}
	}
	if !d.honorLegacyUserLabel {
		d.LegacyUserLabel = "" // rules 2, 5 and 9 then ignore the label, as with legacyUserLabel ""
	}
	if d.BypassAuth && d.ExternalUsers.Len() == 0 && d.ExternalGroups.Len() == 0 &&
		!hasProblem(problems, "externalUsers") && !hasProblem(problems, "externalGroups") {
		problems = append(problems, "bypassAuth: is true but externalUsers and externalGroups are both empty, so it would trust "+
			"nobody: add the users or groups allowed to supply the annotation, or set bypassAuth to false")
	}
	return d.Settings, problems
}

// hasProblem reports whether the setting key has a problem of its own (not one of an item, key[i]).
func hasProblem(problems []string, key string) bool {
	return slices.ContainsFunc(problems, func(p string) bool { return strings.HasPrefix(p, key+": ") })
}

// readSetting stores value in row's field when it has the field's type, appending any problem.
func readSetting(d *settingsDraft, row settingRow, value gjson.Result, problems []string) []string {
	wrong := ""
	switch field := row.field(d).(type) {
	case *bool:
		if value.Type != gjson.True && value.Type != gjson.False {
			wrong = "must be true or false, not " + jsonTypeName(value)
			break
		}
		*field = value.Bool()
	case *string:
		if value.Type != gjson.String {
			wrong = "must be a string, not " + jsonTypeName(value)
			break
		}
		*field = value.Str
	case *jsonText:
		*field = jsonText(value.Raw)
	case *Patterns:
		sources, why := patternSources(value)
		if why != "" {
			wrong = why
			break
		}
		for i, src := range sources {
			if why := patternLimitProblem(src); why != "" {
				problems = append(problems, row.key+"["+strconv.Itoa(i)+"]: "+why)
			}
		}
		*field = Patterns{sources: sources}
	}
	if wrong == "" && row.check != nil {
		wrong = row.check(d)
	}
	if wrong != "" {
		problems = append(problems, row.key+": "+wrong)
	}
	return problems
}

// patternSources reads a list of regexes. A single string is read as YuniKorn reads its own setting: split
// at commas, items trimmed, empty items dropped (" " is an empty list, not a pattern matching every name
// with a space). A list's items are never split.
func patternSources(value gjson.Result) ([]string, string) {
	sources := []string{}
	switch {
	case value.Type == gjson.String:
		for _, item := range strings.Split(value.Str, ",") {
			if item = strings.TrimSpace(item); item != "" {
				sources = append(sources, item)
			}
		}
	case value.IsArray():
		problem := ""
		value.ForEach(func(_, item gjson.Result) bool {
			if item.Type != gjson.String {
				problem = "item " + strconv.Itoa(len(sources)) + " must be a string (a regular expression), not " + jsonTypeName(item)
				return false
			}
			sources = append(sources, item.Str)
			return true
		})
		if problem != "" {
			return nil, problem
		}
	default:
		return nil, "must be a list of regular expressions (or one string of them separated by commas), not " + jsonTypeName(value)
	}
	return sources, ""
}

func unknownKey(key string) string {
	return "unknown key " + strconv.Quote(key) + ": valid keys are " + strings.Join(SettingsKeys[:], ", ")
}

// notSettings explains settings that are not a JSON object.
func notSettings(why string) string {
	return "settings must be a JSON object with the keys " + strings.Join(SettingsKeys[:], ", ") + ": " + why
}

// patternLimitProblem refuses, without compiling it, the empty pattern and one over the compiler's limits.
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

// groupNesting is how deep the pattern's groups nest as RE2 parses them (escaped, in a class or in
// \Q...\E, a parenthesis is a literal), erring on the side of counting.
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

// compileProblems reports every pattern within the limits that does not compile or matches the empty
// string (and so every name).
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

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

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
