package text

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

func TestOpticks(t *testing.T) {
	s := Opticks()
	if len(s) != 567198 || !strings.HasPrefix(s, "Produced by Suzanne Lybarger") || !strings.HasSuffix(s, "corrupted\nthemselves.") {
		t.Fatalf("the embedded text is not Go's testdata/Isaac.Newton-Opticks.txt (%d bytes)", len(s))
	}
	c := OpticksCorpus()
	if c.Vocab.Size() != 91 {
		t.Errorf("%d characters, want 91", c.Vocab.Size())
	}
	if len(c.Train) != 512038 || len(c.Val) != 55000 {
		t.Errorf("split %d + %d, want 512038 + 55000", len(c.Train), len(c.Val))
	}
	if got := c.Vocab.Decode(c.Val[:30]); got != blockOf(s, 9)[:len(got)] {
		t.Errorf("validation starts with %q, want block 9 of the text", got)
	}
	if got := c.Vocab.Decode(c.Train); got != strings.Join(blocks(s, func(i int) bool { return i%SplitEvery != SplitEvery-1 }), "") {
		t.Error("the training split is not the text without its validation blocks")
	}
}

// blocks returns the blocks of SplitBlock characters of s whose numbers keep accepts.
func blocks(s string, keep func(int) bool) []string {
	r := []rune(s)
	var out []string
	for i, at := 0, 0; at < len(r); i, at = i+1, at+SplitBlock {
		if keep(i) {
			out = append(out, string(r[at:min(at+SplitBlock, len(r))]))
		}
	}
	return out
}

func blockOf(s string, n int) string { return blocks(s, func(i int) bool { return i == n })[0] }

func TestVocab(t *testing.T) {
	v := NewVocab("banana, Phænomena")
	if v.Size() != 11 { // ' ', ',', 'P', 'a', 'b', 'e', 'h', 'm', 'n', 'o', 'æ'
		t.Fatalf("size %d, want 11", v.Size())
	}
	ids, err := v.Encode("æ ab")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(ids, []int{10, 0, 3, 4}) {
		t.Errorf("ids %v, want [10 0 3 4] (code-point order)", ids)
	}
	if got := v.Decode([]int{4, 3, 8, -1, 11}); got != "ban\uFFFD\uFFFD" {
		t.Errorf("Decode: %q", got)
	}
	if _, err := v.Encode("bandana"); err == nil || !strings.Contains(err.Error(), `'d' at byte 3`) {
		t.Errorf("an unknown character: %v", err)
	}
}

func TestNewCorpus(t *testing.T) {
	c, err := NewCorpus("abcdefghij", 2, 3) // blocks ab cd ef gh ij: ef for validation
	if err != nil {
		t.Fatal(err)
	}
	if got := c.Vocab.Decode(c.Train) + "|" + c.Vocab.Decode(c.Val); got != "abcdghij|ef" {
		t.Errorf("split %q, want abcdghij|ef", got)
	}
	if c, _ := NewCorpus("abcdefghij", 4, 3); c.Vocab.Decode(c.Val) != "ij" { // the short last block
		t.Errorf("validation %q, want ij", c.Vocab.Decode(c.Val))
	}
	if c, _ := NewCorpus("abcdefghij", 1, 10); c.Vocab.Decode(c.Val) != "j" { // the last tenth
		t.Errorf("validation %q, want j", c.Vocab.Decode(c.Val))
	}
	for _, bad := range [][2]int{{0, 10}, {5, 1}} {
		if _, err := NewCorpus("abc", bad[0], bad[1]); err == nil {
			t.Errorf("NewCorpus(block %d, every %d): no error", bad[0], bad[1])
		}
	}
}

// The training and validation tokens of the Opticks, and a round trip through the vocabulary.
func ExampleOpticksCorpus() {
	c := OpticksCorpus()
	fmt.Println(c.Vocab.Size(), "characters;", len(c.Train), "for training,", len(c.Val), "for validation")
	ids, _ := c.Vocab.Encode("Light")
	fmt.Println(ids, c.Vocab.Decode(ids))
	// Output:
	// 91 characters; 512038 for training, 55000 for validation
	// [36 63 61 62 74] Light
}
