package cpu

import (
	"math"
	"slices"
	"testing"

	"github.com/torchlean-go/torchlean/internal/testenv"
)

// The optimizer twins on values whose arithmetic is exact; ops/optim_test.go checks them against
// float64 references of PyTorch's formulas.

func TestSGDStep(t *testing.T) {
	inf := float32(math.Inf(1))
	p := []float32{2, -1, inf}
	SGDStep(p, []float32{1, 0.5, 1}, 0.5, 0)
	if want := []float32{1.5, -1.25, inf}; !slices.Equal(p, want) {
		t.Errorf("plain step: %v, want %v", p, want)
	}
	// Weight decay adds wd*p to the gradient: d = (1 + 0.5*2, 0.5 + 0.5*-1) = (2, 0).
	p = []float32{2, -1}
	SGDStep(p, []float32{1, 0.5}, 0.5, 0.5)
	if want := []float32{1, -1}; !slices.Equal(p, want) {
		t.Errorf("step with weight decay: %v, want %v", p, want)
	}
}

func TestSGDMomentumStep(t *testing.T) {
	g := []float32{1, -2}
	// The first step sets the buffer to the gradient whatever it held (PyTorch's None buffer).
	p, b := []float32{4, 4}, []float32{100, 100}
	SGDMomentumStep(p, b, g, SGDFirst, 0.5, 0, 0.5, 0.75)
	if !slices.Equal(b, g) || !slices.Equal(p, []float32{3.5, 5}) {
		t.Errorf("first step: p %v b %v, want [3.5 5] %v", p, b, g)
	}
	// Later steps: b = 0.5 b + 0.75 g.
	SGDMomentumStep(p, b, g, 0, 0.5, 0, 0.5, 0.75)
	if want := []float32{1.25, -2.5}; !slices.Equal(b, want) || !slices.Equal(p, []float32{2.875, 6.25}) {
		t.Errorf("second step: p %v b %v, want [2.875 6.25] %v", p, b, want)
	}
	// Nesterov: d = g + momentum*b.
	p, b = []float32{4, 4}, []float32{0, 0}
	SGDMomentumStep(p, b, g, SGDFirst|SGDNesterov, 0.5, 0, 0.5, 1)
	if !slices.Equal(b, g) || !slices.Equal(p, []float32{3.25, 5.5}) {
		t.Errorf("nesterov first step: p %v b %v, want [3.25 5.5] %v", p, b, g)
	}
}

func TestAdamStep(t *testing.T) {
	// Step 1 with beta1 = 0.5: m = g/2, v = g*g/4, and with eps = 0 the update is
	// stepSize * m / (sqrt(v)/bc2Sqrt) = lr * sign(g) (0/0 = NaN for g = 0).
	// Here beta2 = 0.75, so that bc2Sqrt = sqrt(1 - 0.75) = 0.5 is exact; stepSize = 0.25/(1-0.5).
	p, m, v := []float32{1, 1, 3}, []float32{0, 0, 0}, []float32{0, 0, 0}
	g := []float32{2, -4, 0}
	AdamStep(p, m, v, g, 0.5, 0.5, 0.75, 0.25, 0.5, 0.5, 0, 0, 1)
	if want := []float32{1, -2, 0}; !slices.Equal(m, want) {
		t.Errorf("m = %v, want %v", m, want)
	}
	if want := []float32{1, 4, 0}; !slices.Equal(v, want) {
		t.Errorf("v = %v, want %v", v, want)
	}
	// den = sqrt(v)/0.5 = (2, 4, 0); m/den = (0.5, -0.5, NaN for 0/0 with eps = 0).
	if p[0] != 0.75 || p[1] != 1.25 || !math.IsNaN(float64(p[2])) {
		t.Errorf("p = %v, want [0.75 1.25 NaN]", p)
	}

	// AdamW's decay multiplies the parameter first; Adam's L2 term adds wd*p to the gradient.
	p, m, v = []float32{2}, []float32{0}, []float32{0}
	AdamStep(p, m, v, []float32{0}, 0.5, 0.5, 0.75, 0.25, 0.5, 0.5, 1, 0, 0.75)
	if p[0] != 1.5 || m[0] != 0 || v[0] != 0 {
		t.Errorf("decoupled decay only: p %v m %v v %v, want 1.5 0 0", p, m, v)
	}
	p, m, v = []float32{2}, []float32{0}, []float32{0}
	AdamStep(p, m, v, []float32{1}, 0.5, 0.5, 0.75, 0.25, 0.5, 0.5, 0, 0.5, 1)
	if m[0] != 1 || v[0] != 1 || p[0] != 1.75 { // g = 1 + 0.5*2 = 2
		t.Errorf("L2 term: p %v m %v v %v, want 1.75 1 1", p, m, v)
	}
}

func TestRMSpropStep(t *testing.T) {
	// Plain: s = 0.5*4 + (0.5*2)*2 = 4, avg = sqrt(4) + 0 = 2, p = p - (0.5*2)/2.
	p, sq := []float32{3, 1}, []float32{4, 4}
	RMSpropStep(p, sq, nil, nil, []float32{2, -2}, 0, 0.5, 0.5, 0.5, 0, 0, 0)
	if !slices.Equal(sq, []float32{4, 4}) || !slices.Equal(p, []float32{2.5, 1.5}) {
		t.Errorf("plain step: p %v sq %v, want [2.5 1.5] [4 4]", p, sq)
	}
	// Weight decay: g = 1 + 0.5*2 = 2, then as above.
	p, sq = []float32{2}, []float32{4}
	RMSpropStep(p, sq, nil, nil, []float32{1}, 0, 0.5, 0.5, 0.5, 0, 0.5, 0)
	if !slices.Equal(p, []float32{1.5}) {
		t.Errorf("step with weight decay: p %v, want [1.5]", p)
	}
	// Centered with momentum: s = 0.5*12 + 2 = 8, a = 0.5*2 + 0.5*2 = 2, avg = sqrt(8 - 4) + 2 = 4,
	// b = 0.5*1 + 2/4 = 1, p = p - 0.5*1. The buffers absent from the flags are not touched.
	p, sq, ga, buf := []float32{3}, []float32{12}, []float32{2}, []float32{1}
	RMSpropStep(p, sq, ga, buf, []float32{2}, RMSpropCentered|RMSpropMomentum, 0.5, 0.5, 0.5, 2, 0, 0.5)
	if sq[0] != 8 || ga[0] != 2 || buf[0] != 1 || p[0] != 2.5 {
		t.Errorf("centered momentum step: p %v sq %v ga %v buf %v, want [2.5] [8] [2] [1]", p, sq, ga, buf)
	}
	p, sq, ga, buf = []float32{3}, []float32{12}, []float32{2}, []float32{1}
	RMSpropStep(p, sq, ga, buf, []float32{2}, RMSpropMomentum, 0.5, 0.5, 0.5, 2, 0, 0.5)
	// avg = sqrt(8) + 2; b = 0.5 + 2/avg.
	avg := Sqrtf(8) + 2
	b := 0.5 + 2/avg
	if ga[0] != 2 || buf[0] != b || p[0] != 3-float32(0.5*b) {
		t.Errorf("momentum step: p %v ga %v buf %v, want [%v] [2] [%v]", p, ga, buf, 3-float32(0.5*b), b)
	}
	// Infinities and NaN propagate as in the formula: an infinite gradient gives avg = +Inf and
	// inf/inf = NaN.
	inf := float32(math.Inf(1))
	p, sq = []float32{1}, []float32{0}
	RMSpropStep(p, sq, nil, nil, []float32{inf}, 0, 0.5, 0.5, 0.5, 0, 0, 0)
	if !math.IsNaN(float64(p[0])) || sq[0] != inf {
		t.Errorf("infinite gradient: p %v sq %v, want NaN +Inf", p, sq)
	}
}

// TestRMSpropFlags checks the flag bits of rmsprop_step against RMSpropStep's (arithmetic: the
// centered and momentum branches).
func TestRMSpropFlags(t *testing.T) {
	testenv.CheckCUDAConstants(t, []testenv.CUDAConstant{
		{Files: "../ptx/optim.cu", Expr: "TL_RMSPROP_CENTERED", GoName: "RMSpropCentered", Go: RMSpropCentered},
		{Files: "../ptx/optim.cu", Expr: "TL_RMSPROP_MOMENTUM", GoName: "RMSpropMomentum", Go: RMSpropMomentum},
	})
}
