package wire

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"go.yaml.in/yaml/v3"

	"watchdog/state"
)

// maxContractBytes bounds a contract file: a contract is a short list.
const maxContractBytes = 1 << 20

// contractFile is a --contract file: the registration's `artifacts` list only.
type contractFile struct {
	Artifacts []Artifact `json:"artifacts" yaml:"artifacts"`
}

// ReadContract reads a JSON (starting with "{") or YAML artifact contract
// file, rejecting unknown fields. Its errors are one line.
func ReadContract(path string) ([]state.ArtifactSpec, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxContractBytes+1))
	if err != nil {
		return nil, fmt.Errorf("read: %w", err)
	}
	if len(data) > maxContractBytes {
		return nil, fmt.Errorf("larger than %d bytes", maxContractBytes)
	}
	var c contractFile
	if trimmed := bytes.TrimSpace(data); len(trimmed) > 0 && trimmed[0] == '{' {
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&c); err != nil {
			return nil, fmt.Errorf("invalid JSON: %w", err)
		}
		if dec.More() {
			return nil, errors.New("invalid JSON: data after the contract object")
		}
	} else {
		dec := yaml.NewDecoder(bytes.NewReader(data))
		dec.KnownFields(true)
		if err := dec.Decode(&c); err != nil {
			if errors.Is(err, io.EOF) {
				return nil, errors.New("empty contract")
			}
			// yaml lists one problem per line; the CLI prints one line.
			return nil, fmt.Errorf("invalid YAML: %s", strings.Join(strings.Fields(err.Error()), " "))
		}
	}
	if len(c.Artifacts) == 0 {
		return nil, errors.New(`no artifacts (want {"artifacts": [{"path": ...}]})`)
	}
	specs := make([]state.ArtifactSpec, 0, len(c.Artifacts))
	for _, a := range c.Artifacts {
		specs = append(specs, a.Spec())
	}
	return specs, nil
}

// ContractFromFlags is exec's and probe's artifact contract: --artifact
// files, then the contract file's, checked, root made absolute.
func ContractFromFlags(artifacts []string, contract, root string) ([]state.ArtifactSpec, string, error) {
	var specs []state.ArtifactSpec
	for _, a := range artifacts {
		specs = append(specs, state.ArtifactSpec{Path: a, Required: true, MinBytes: 1, Kind: state.ArtifactFile})
	}
	if contract != "" {
		more, err := ReadContract(contract)
		if err != nil {
			return nil, "", fmt.Errorf("--contract %s: %v", contract, err)
		}
		specs = append(specs, more...)
	}
	for _, s := range specs {
		if err := s.Validate(); err != nil {
			return nil, "", err
		}
	}
	if len(specs) == 0 {
		if root != "" {
			return nil, "", errors.New("--artifacts-root needs --artifact or --contract")
		}
		return nil, "", nil
	}
	if root == "" {
		root = "."
	}
	abs, err := filepath.Abs(root)
	if err != nil {
		return nil, "", fmt.Errorf("--artifacts-root %q: %v", root, err)
	}
	return specs, abs, nil
}
