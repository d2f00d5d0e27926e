// Package text holds the training text of the character-level language-model examples
// (examples/ssm, examples/gpt) and what they do with it: a vocabulary of its characters, the
// encoding of text to token ids and back, and the split into training and validation tokens.
//
// The text is Isaac Newton's Opticks: or, a Treatise of the Reflections, Refractions, Inflections
// and Colours of Light (the fourth edition, London 1730), in the transcription of Project
// Gutenberg's Distributed Proofreaders team (Suzanne Lybarger, Steve Harris, Josephine Paolucci).
// The work is in the public domain; this copy (opticks.txt, 567,198 bytes of UTF-8, 567,038
// characters, 91 distinct) is the file that every Go distribution ships as
// $GOROOT/src/testdata/Isaac.Newton-Opticks.txt, byte for byte: it carries no Project Gutenberg
// header or licence, only the producers' credit line, so no trademark terms apply to it.
package text

import (
	_ "embed"
	"fmt"
	"slices"
	"strings"
)

//go:embed opticks.txt
var opticks string

// Opticks returns the whole text of Newton's Opticks (see the package comment).
func Opticks() string { return opticks }

// Vocab maps the distinct characters (Unicode code points) of a text to the token ids 0 ..
// Size()-1, in ascending code-point order (so the same text always gives the same ids).
type Vocab struct {
	runes []rune
	ids   map[rune]int
}

// NewVocab returns the vocabulary of the characters of s.
func NewVocab(s string) *Vocab {
	ids := map[rune]int{}
	for _, r := range s {
		ids[r] = 0
	}
	v := &Vocab{ids: ids}
	for r := range ids {
		v.runes = append(v.runes, r)
	}
	slices.Sort(v.runes)
	for i, r := range v.runes {
		ids[r] = i
	}
	return v
}

// Size returns the number of characters of the vocabulary (the ids are 0 .. Size()-1).
func (v *Vocab) Size() int { return len(v.runes) }

// Encode returns the ids of the characters of s; a character outside the vocabulary is an
// error naming it and its position.
func (v *Vocab) Encode(s string) ([]int, error) {
	ids := make([]int, 0, len(s))
	for i, r := range s {
		id, ok := v.ids[r]
		if !ok {
			return nil, fmt.Errorf("text: encode: %q at byte %d is not in the vocabulary", r, i)
		}
		ids = append(ids, id)
	}
	return ids, nil
}

// Decode returns the text of the ids; an id outside [0, Size()) becomes U+FFFD.
func (v *Vocab) Decode(ids []int) string {
	var b strings.Builder
	for _, id := range ids {
		if id < 0 || id >= len(v.runes) {
			b.WriteRune('\uFFFD')
			continue
		}
		b.WriteRune(v.runes[id])
	}
	return b.String()
}

// Corpus is a text encoded with the vocabulary of its characters and split in two: the
// training tokens and the validation tokens, each in the text's order.
type Corpus struct {
	Vocab      *Vocab
	Train, Val []int
}

// The split of OpticksCorpus: the text cut into blocks of SplitBlock characters, the last block
// of every SplitEvery (blocks 9, 19, 29, ...) for validation, a tenth of the text spread over the
// whole book. The book's parts differ in kind (the first two books' experiments, the third
// book's observations, then the queries on chemistry, gravity and the ether that end it), so a
// validation split taken from one end measures a change of subject as much as generalization;
// the blocks keep the two splits alike while no character is in both.
const (
	SplitBlock = 5000
	SplitEvery = 10
)

// NewCorpus encodes s with its own vocabulary and splits the tokens: s is cut into blocks of
// block characters (the last one shorter) and the last block of every every blocks, blocks
// every-1, 2·every-1, ..., goes to validation, the others to training, each split in the
// text's order. block >= 1 and every >= 2. NewCorpus(s, (n+9)/10, 10) for a text of n
// characters keeps its last tenth for validation.
func NewCorpus(s string, block, every int) (*Corpus, error) {
	if block < 1 || every < 2 {
		return nil, fmt.Errorf("text: corpus: blocks of %d characters, one of every %d for validation: want block >= 1 and every >= 2", block, every)
	}
	v := NewVocab(s)
	ids, err := v.Encode(s)
	if err != nil {
		return nil, err
	}
	c := &Corpus{Vocab: v}
	for i, at := 0, 0; at < len(ids); i, at = i+1, at+block {
		part := ids[at:min(at+block, len(ids))]
		if i%every == every-1 {
			c.Val = append(c.Val, part...)
		} else {
			c.Train = append(c.Train, part...)
		}
	}
	return c, nil
}

// OpticksCorpus returns the Opticks encoded with its 91 characters and split as SplitBlock and
// SplitEvery say: 512,038 characters for training and 55,000 for validation.
func OpticksCorpus() *Corpus {
	c, err := NewCorpus(opticks, SplitBlock, SplitEvery)
	if err != nil {
		panic(err) // the embedded text encodes with its own vocabulary: unreachable
	}
	return c
}
