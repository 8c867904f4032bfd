package main

import "testing"

func TestCheckLoopback(t *testing.T) {
	for addr, ok := range map[string]bool{
		"127.0.0.1:6060": true,
		"[::1]:6060":     true,
		"localhost:6060": true,
		"127.0.0.2:0":    true,
		"0.0.0.0:6060":   false,
		":6060":          false,
		"10.0.0.1:6060":  false,
		"example.com:80": false,
		"127.0.0.1":      false, // no port
	} {
		if err := checkLoopback(addr); (err == nil) != ok {
			t.Errorf("checkLoopback(%q) = %v, want ok=%v", addr, err, ok)
		}
	}
}
