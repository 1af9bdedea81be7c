// Command webhookconfig prints the MutatingWebhookConfiguration that the cluster suite registers for
// `kwhost serve` (with -validating, the guard's ValidatingWebhookConfiguration), generated from the policy's metadata.yml: its rules are exactly the ones a
// ClusterAdmissionPolicy built from the metadata registers, so the suite proves the configuration
// that ships, not a hand-written copy of it.
//
//	go run ./test/cluster/webhookconfig -metadata metadata.yml -url https://127.0.0.1:19443/validate \
//	  -ca-file ca.crt -namespace-label yunikorn-user-info-e2e=enabled \
//	  -match-conditions examples/default.yaml
//
// Subresources: the rules are copied verbatim. "pods" does not match "pods/status" or "pods/binding":
// an update through pods/status may change a pod's annotations (the status strategy keeps only the old
// spec and owner references), and a Binding's annotations are copied onto the pod it binds, so both must
// be in metadata.yml for rules 5 and 10 to hold against them. The suite shows each hole with the rule
// left out and the fix with it in, rather than patching rules in here.
//
// -extra-rules takes ClusterAdmissionPolicies (comma-separated; the operator examples) whose spec.rules
// beyond metadata.yml's (the declared custom resources of rules 11-13) are appended, so that the suite
// registers the custom-resource rules the examples ship.
//
// -match-conditions takes the matchConditions of a ClusterAdmissionPolicy (the shipped example), so
// that the suite proves the conditions users deploy, not a copy of them.
//
// It is test tooling: it is not built into the policy or the host.
package main

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"reflect"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"
)

// metadata is the part of metadata.yml a webhook configuration needs.
type metadata struct {
	Rules    []rule `yaml:"rules"`
	Mutating *bool  `yaml:"mutating"`
}

type rule struct {
	APIGroups   []string `yaml:"apiGroups" json:"apiGroups"`
	APIVersions []string `yaml:"apiVersions" json:"apiVersions"`
	Resources   []string `yaml:"resources" json:"resources"`
	Operations  []string `yaml:"operations" json:"operations"`
	Scope       string   `yaml:"scope,omitempty" json:"scope,omitempty"`
}

// matchCondition is a CEL expression the API server evaluates before it calls the webhook.
type matchCondition struct {
	Name       string `yaml:"name" json:"name"`
	Expression string `yaml:"expression" json:"expression"`
}

type options struct {
	metadata, url, caFile, namespaceLabel, name, matchConditions, extraRules string
	validating                                                               bool
	timeoutSeconds                                                           int
}

func main() {
	var o options
	flag.StringVar(&o.metadata, "metadata", "metadata.yml", "the policy's metadata.yml")
	flag.StringVar(&o.url, "url", "", "the webhook's URL (https://...)")
	flag.StringVar(&o.caFile, "ca-file", "", "PEM file of the CA that signed the webhook's serving certificate")
	flag.StringVar(&o.namespaceLabel, "namespace-label", "", "only namespaces with this label (key=value)")
	flag.StringVar(&o.name, "name", "yunikorn-user-info-e2e", "the configuration's name")
	flag.IntVar(&o.timeoutSeconds, "timeout-seconds", 10, "the API server's timeout for one call")
	flag.StringVar(&o.matchConditions, "match-conditions", "", "a ClusterAdmissionPolicy YAML whose spec.matchConditions the webhook gets (none when empty)")
	flag.StringVar(&o.extraRules, "extra-rules", "", "ClusterAdmissionPolicy YAML files (comma-separated) whose spec.rules beyond metadata.yml's are appended")
	flag.BoolVar(&o.validating, "validating", false, "a ValidatingWebhookConfiguration (the guard: the policy deployed with mutating: false)")
	flag.Parse()
	if err := run(o, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "webhookconfig:", err)
		os.Exit(1)
	}
}

func run(o options, w io.Writer) error {
	if o.url == "" || o.caFile == "" {
		return errors.New("-url and -ca-file are required")
	}
	data, err := os.ReadFile(o.metadata)
	if err != nil {
		return err
	}
	rules, err := rulesOf(data)
	if err != nil {
		return fmt.Errorf("%s: %w", o.metadata, err)
	}
	if o.extraRules != "" {
		for _, file := range strings.Split(o.extraRules, ",") {
			data, err := os.ReadFile(file)
			if err != nil {
				return err
			}
			extra, err := extraRulesOf(data, rules)
			if err != nil {
				return fmt.Errorf("%s: %w", file, err)
			}
			rules = append(rules, extra...)
		}
	}
	ca, err := os.ReadFile(o.caFile)
	if err != nil {
		return err
	}
	var conditions []matchCondition
	if o.matchConditions != "" {
		data, err := os.ReadFile(o.matchConditions)
		if err != nil {
			return err
		}
		if conditions, err = matchConditionsOf(data); err != nil {
			return fmt.Errorf("%s: %w", o.matchConditions, err)
		}
	}
	cfg, err := configuration(o, rules, conditions, ca)
	if err != nil {
		return err
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(cfg)
}

// rulesOf reads the rules of metadata.yml, refusing what a ClusterAdmissionPolicy would not take.
func rulesOf(data []byte) ([]rule, error) {
	var m metadata
	if err := yaml.Unmarshal(data, &m); err != nil {
		return nil, err
	}
	if m.Mutating == nil || !*m.Mutating {
		return nil, errors.New("mutating is not true: the policy would be registered as a validating webhook, and its patches refused")
	}
	if len(m.Rules) == 0 {
		return nil, errors.New("no rules")
	}
	for i, r := range m.Rules {
		for field, values := range map[string][]string{"apiGroups": r.APIGroups, "apiVersions": r.APIVersions,
			"resources": r.Resources, "operations": r.Operations} {
			if len(values) == 0 {
				return nil, fmt.Errorf("rules[%d]: %s is empty", i, field)
			}
		}
	}
	return m.Rules, nil
}

// extraRulesOf returns the spec.rules of a ClusterAdmissionPolicy that are not among have.
func extraRulesOf(data []byte, have []rule) ([]rule, error) {
	var p struct {
		Kind string `yaml:"kind"`
		Spec struct {
			Rules []rule `yaml:"rules"`
		} `yaml:"spec"`
	}
	if err := yaml.Unmarshal(data, &p); err != nil {
		return nil, err
	}
	if p.Kind != "ClusterAdmissionPolicy" {
		return nil, fmt.Errorf("kind %q, want a ClusterAdmissionPolicy", p.Kind)
	}
	var extra []rule
	for _, r := range p.Spec.Rules {
		if !slices.ContainsFunc(have, func(h rule) bool { return reflect.DeepEqual(h, r) }) {
			extra = append(extra, r)
		}
	}
	if len(extra) == 0 {
		return nil, errors.New("no rules beyond metadata.yml's")
	}
	return extra, nil
}

// matchConditionsOf reads spec.matchConditions of a ClusterAdmissionPolicy.
func matchConditionsOf(data []byte) ([]matchCondition, error) {
	var p struct {
		Kind string `yaml:"kind"`
		Spec struct {
			MatchConditions []matchCondition `yaml:"matchConditions"`
		} `yaml:"spec"`
	}
	if err := yaml.Unmarshal(data, &p); err != nil {
		return nil, err
	}
	if p.Kind != "ClusterAdmissionPolicy" {
		return nil, fmt.Errorf("kind %q, want a ClusterAdmissionPolicy", p.Kind)
	}
	if len(p.Spec.MatchConditions) == 0 {
		return nil, errors.New("spec.matchConditions is empty")
	}
	for i, c := range p.Spec.MatchConditions {
		if c.Name == "" || strings.TrimSpace(c.Expression) == "" {
			return nil, fmt.Errorf("spec.matchConditions[%d]: name and expression are required", i)
		}
	}
	return p.Spec.MatchConditions, nil
}

func configuration(o options, rules []rule, conditions []matchCondition, ca []byte) (map[string]any, error) {
	hook := map[string]any{
		"name":                    o.name + ".kwhost.test",
		"clientConfig":            map[string]any{"url": o.url, "caBundle": base64.StdEncoding.EncodeToString(ca)},
		"rules":                   rules,
		"failurePolicy":           "Fail",
		"matchPolicy":             "Equivalent",
		"sideEffects":             "None",
		"admissionReviewVersions": []string{"v1"},
		"timeoutSeconds":          o.timeoutSeconds,
	}
	kind := "ValidatingWebhookConfiguration"
	if !o.validating {
		kind, hook["reinvocationPolicy"] = "MutatingWebhookConfiguration", "Never"
	}
	if len(conditions) > 0 {
		hook["matchConditions"] = conditions
	}
	if o.namespaceLabel != "" {
		key, value, ok := strings.Cut(o.namespaceLabel, "=")
		if !ok || key == "" {
			return nil, fmt.Errorf("-namespace-label %q: want key=value", o.namespaceLabel)
		}
		hook["namespaceSelector"] = map[string]any{"matchLabels": map[string]string{key: value}}
	}
	return map[string]any{
		"apiVersion": "admissionregistration.k8s.io/v1",
		"kind":       kind,
		"metadata":   map[string]any{"name": o.name},
		"webhooks":   []any{hook},
	}, nil
}
