// Command scripted is a Kubewarden test guest whose behaviour comes from its settings, so that the
// tests of package kwctl and of kwhost can drive every kind of answer through real wasm:
//
//	{"invalid": "msg"}        validate_settings refuses with msg
//	{"log": "text"}           validate logs text through kubewarden/tracing/log
//	{"fail": "msg"}           validate returns a Go error
//	{"panic": true}           validate panics (a trap)
//	{"response": {...}}       validate answers this object verbatim (default {"accepted":true})
//
// Built by the tests with TinyGo; never part of the policy.
package main

import (
	"encoding/json"
	"errors"

	wapc "github.com/wapc/wapc-guest-tinygo"
)

type settings struct {
	Invalid  *string         `json:"invalid"`
	Log      string          `json:"log"`
	Fail     string          `json:"fail"`
	Panic    bool            `json:"panic"`
	Response json.RawMessage `json:"response"`
}

func main() {
	wapc.RegisterFunctions(wapc.Functions{
		"validate_settings": func(payload []byte) ([]byte, error) {
			var s settings
			if err := json.Unmarshal(payload, &s); err != nil {
				return nil, err
			}
			if s.Invalid != nil {
				msg, _ := json.Marshal(*s.Invalid)
				return []byte(`{"valid":false,"message":` + string(msg) + `}`), nil
			}
			return []byte(`{"valid":true}`), nil
		},
		"validate": func(payload []byte) ([]byte, error) {
			var in struct {
				Settings settings `json:"settings"`
			}
			if err := json.Unmarshal(payload, &in); err != nil {
				return nil, err
			}
			s := in.Settings
			if s.Log != "" {
				line, _ := json.Marshal(map[string]string{"level": "info", "message": s.Log})
				if _, err := wapc.HostCall("kubewarden", "tracing", "log", line); err != nil {
					return nil, err
				}
			}
			switch {
			case s.Fail != "":
				return nil, errors.New(s.Fail)
			case s.Panic:
				panic("scripted panic")
			case s.Response != nil:
				return s.Response, nil
			}
			return []byte(`{"accepted":true}`), nil
		},
	})
}
