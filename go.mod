module github.com/seed-a6d343df/yunikorn-user-info-policy

go 1.25.0

require (
	github.com/francoispqt/onelog v0.0.0-20190306043706-8c2bb31b10a4
	github.com/google/go-cmp v0.7.0
	github.com/kubewarden/k8s-objects v1.29.0-kw1
	github.com/kubewarden/policy-sdk-go v0.13.1
	github.com/mailru/easyjson v0.9.0
	github.com/tetratelabs/wazero v1.12.0
	github.com/tidwall/gjson v1.18.0
	github.com/wI2L/jsondiff v0.6.1
	github.com/wapc/wapc-guest-tinygo v0.3.3
	gopkg.in/yaml.v3 v3.0.1
)

require (
	github.com/francoispqt/gojay v0.0.0-20181220093123-f2cc13a668ca // indirect
	github.com/go-openapi/strfmt v0.21.3 // indirect
	github.com/tidwall/match v1.1.1 // indirect
	github.com/tidwall/pretty v1.2.1 // indirect
	github.com/tidwall/sjson v1.2.5 // indirect
	golang.org/x/sys v0.44.0 // indirect
)

replace github.com/go-openapi/strfmt => github.com/kubewarden/strfmt v0.1.3
