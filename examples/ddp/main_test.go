package main

import (
	"os"
	"testing"
)

// TestTrainTwoRanks: 2 in-process CPU ranks on 4,000 training images for one epoch reach a test
// accuracy well above chance (10%).
func TestTrainTwoRanks(t *testing.T) {
	if _, _, err := loadData(""); err != nil {
		t.Skip(err)
	}
	acc, err := run(config{ranks: 2, epochs: 1, batch: 32, hidden: 64, limit: 4000, lr: 0.1, seed: 1, device: "cpu"}, os.Stdout)
	if err != nil {
		t.Fatal(err)
	}
	if acc < 0.6 {
		t.Errorf("test accuracy %.3f", acc)
	}
	t.Logf("test accuracy %.3f", acc)
}
