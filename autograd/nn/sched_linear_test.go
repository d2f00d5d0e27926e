package nn

import "testing"

func TestLinearLR(t *testing.T) {
	opt := &fakeOpt{lr: 0.1}
	s, err := NewLinearLR(opt, 1, 0, 4)
	if err != nil {
		t.Fatal(err)
	}
	base := 0.1
	for n := range 6 {
		want := base * (1 - float64(min(n, 4))/4) // the example's decay, lr * (1 - t/T), to the bit
		if opt.lr != want || s.LR() != want {
			t.Fatalf("after %d steps: lr %v (LR() %v), want %v", n, opt.lr, s.LR(), want)
		}
		s.Step()
	}
	st := s.State()
	again, _ := NewLinearLR(&fakeOpt{lr: 0.1}, 1, 0, 4)
	if err := again.LoadState(st); err != nil || again.LR() != 0 {
		t.Fatalf("LoadState: %v, lr %v", err, again.LR())
	}
	for _, bad := range [][3]float64{{0, 0, 4}, {1, 2, 4}, {1, 0, 0}} {
		if _, err := NewLinearLR(opt, bad[0], bad[1], int(bad[2])); err == nil {
			t.Errorf("NewLinearLR%v: no error", bad)
		}
	}
}

type fakeOpt struct{ lr float64 }

func (o *fakeOpt) LR() float64      { return o.lr }
func (o *fakeOpt) SetLR(lr float64) { o.lr = lr }
