package policy

import (
	"strconv"
	"unicode/utf8"

	"github.com/mailru/easyjson/jwriter"
	"github.com/tidwall/gjson"

	"github.com/seed-a6d343df/yunikorn-user-info-policy/policy/internal/rawjson"
)

// AnnotationKey is the annotation YuniKorn reads the submitting user from.
const AnnotationKey = "yunikorn.apache.org/user.info"

// UserInfo is the value of the annotation, encoded as YuniKorn does (docs/rules.md "Value format"): keys in
// this order, groups in the API server's order and left out when empty, encoding/json's escaping (which
// easyjson's writer matches; a test compares them).
type UserInfo struct {
	User   string
	Groups []string
}

// Encode returns the annotation value for u.
func (u UserInfo) Encode() string {
	w := jwriter.Writer{}
	w.RawString(`{"user":`)
	w.String(u.User)
	if len(u.Groups) != 0 {
		w.RawString(`,"groups":`)
		writeStrings(&w, u.Groups)
	}
	w.RawByte('}')
	return string(w.Buffer.BuildBytes())
}

// stampValue is UserInfo{User: u.username, Groups: u's groups}.Encode(); a plain groups array is copied
// as it is.
func stampValue(u *requester) string {
	if !u.plain {
		return UserInfo{User: u.username, Groups: u.groupSlice()}.Encode()
	}
	w := jwriter.Writer{}
	w.Buffer.EnsureSpace(len(u.username) + len(u.groups.Raw) + 24)
	w.RawString(`{"user":`)
	w.String(u.username)
	if u.groups.Raw != "[]" { // an empty list is left out, as UserInfo's omitempty does
		w.RawString(`,"groups":`)
		w.RawString(u.groups.Raw)
	}
	w.RawByte('}')
	return string(w.Buffer.BuildBytes())
}

// stampJSON is rawjson.Quote(stampValue(u)) in parts: a plain groups array is one part written from the
// payload with its quotes escaped, not copied (20,000 groups are ~750 KB).
func stampJSON(u *requester) []rawjson.Part {
	if !u.plain {
		return rawjson.Texts(nil, rawjson.Quote(stampValue(u)))
	}
	user := rawjson.Quote(rawjson.Quote(u.username)) // the user's JSON string, as a JSON string
	user = user[1 : len(user)-1]
	if u.groups.Raw == "[]" { // an empty list is left out, as UserInfo's omitempty does
		return rawjson.Texts(nil, `"{\"user\":`+user+`}"`)
	}
	return []rawjson.Part{{Text: `"{\"user\":` + user + `,\"groups\":`}, {Text: u.groups.Raw, Quotes: 2 * u.count}, {Text: `}"`}}
}

// checkSuppliedValue applies the strict validator of docs/rules.md "Value format" to a trusted requester's
// value: "" when it is valid, or what is wrong with it.
func checkSuppliedValue(value string) string {
	if !rawjson.Valid(value) {
		return "it is not valid JSON"
	}
	if !utf8.ValidString(value) {
		return "it is not valid UTF-8" // encoding/json would read U+FFFD where gjson keeps the raw bytes
	}
	doc := gjson.Parse(value)
	if !doc.IsObject() {
		return `it must be a JSON object like {"user":"alice","groups":["devops"]}`
	}
	var problem string
	var haveUser, haveGroups bool
	doc.ForEach(func(key, val gjson.Result) bool {
		switch key.Str {
		case "user":
			switch {
			case haveUser:
				problem = keyTwice("user")
			case val.Type != gjson.String:
				problem = `"user" must be a string`
			case val.Str == "":
				problem = `"user" must not be empty`
			}
			haveUser = true
		case "groups":
			switch {
			case haveGroups:
				problem = keyTwice("groups")
			case !val.IsArray():
				problem = `"groups" must be a list of strings`
			default:
				val.ForEach(func(_, g gjson.Result) bool {
					if g.Type != gjson.String {
						problem = `"groups" must be a list of strings`
					}
					return problem == ""
				})
			}
			haveGroups = true
		default:
			problem = "unknown key " + strconv.Quote(key.Str) + `: only "user" and "groups" are allowed`
		}
		return problem == ""
	})
	if problem == "" && !haveUser {
		problem = `the key "user" is missing`
	}
	return problem
}
