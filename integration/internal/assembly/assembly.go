// Package assembly reads a synthesized CDK cloud assembly (cdk.out and
// friends): its stacks and their templates, so that tests and scripts
// never type a stack name.
package assembly

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Stack is a CloudFormation stack of an assembly.
type Stack struct {
	Name     string // the stack name cdk deploy uses
	Template string // path of its template
}

type manifest struct {
	Artifacts map[string]struct {
		Type        string `json:"type"`
		DisplayName string `json:"displayName"`
		Properties  struct {
			TemplateFile string `json:"templateFile"`
			StackName    string `json:"stackName"`
		} `json:"properties"`
	} `json:"artifacts"`
}

// Stacks returns the stacks of the assembly in dir, by name.
func Stacks(dir string) ([]Stack, error) {
	raw, err := os.ReadFile(filepath.Join(dir, "manifest.json"))
	if err != nil {
		return nil, fmt.Errorf("assembly: %w (synthesize it first)", err)
	}
	var m manifest
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, fmt.Errorf("assembly: %s/manifest.json: %w", dir, err)
	}
	var stacks []Stack
	for id, a := range m.Artifacts {
		if a.Type != "aws:cloudformation:stack" {
			continue
		}
		name := a.Properties.StackName
		if name == "" {
			name = id // CDK leaves it out when it is the artifact id
		}
		stacks = append(stacks, Stack{Name: name, Template: filepath.Join(dir, a.Properties.TemplateFile)})
	}
	slices.SortFunc(stacks, func(a, b Stack) int { return strings.Compare(a.Name, b.Name) })
	return stacks, nil
}

// Only returns the one stack of the assembly in dir.
func Only(dir string) (Stack, error) {
	stacks, err := Stacks(dir)
	if err != nil {
		return Stack{}, err
	}
	if len(stacks) != 1 {
		return Stack{}, fmt.Errorf("assembly: want one stack in %s, found %d", dir, len(stacks))
	}
	return stacks[0], nil
}
