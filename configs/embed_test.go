package configs

import (
	"bytes"
	"os"
	"testing"
)

func TestDefaultIsDefaultYAML(t *testing.T) {
	onDisk, err := os.ReadFile("default.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if len(Default) == 0 || !bytes.Equal(Default, onDisk) {
		t.Errorf("Default (%d bytes) is not default.yaml (%d bytes)", len(Default), len(onDisk))
	}
}
