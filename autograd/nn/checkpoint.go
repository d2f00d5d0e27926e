package nn

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/torchlean-go/torchlean/autograd"
	"github.com/torchlean-go/torchlean/ops"
)

// StatefulOptimizer is an optimizer whose state a Checkpoint saves: autograd's SGD, Adam,
// AdamW and RMSprop.
type StatefulOptimizer interface {
	Optimizer
	State() (map[string]*ops.Buffer, error)
	LoadState(map[string]*ops.Buffer) error
}

// Checkpoint is everything a training run needs to resume: one safetensors file with the
// model's parameters and buffers under their keys (as StateDict: PyTorch's load_state_dict reads
// them with strict=False), the optimizer's state in the parameters' shapes under
// "optimizer.<key>.<state>" (PyTorch's names: exp_avg, exp_avg_sq, momentum_buffer, square_avg,
// step...), and in the metadata the optimizer's learning rate, the scheduler's state, the
// session's random state (seed and draw count) and Step. A run resumed from it is
// bit-identical to the run that was never stopped, given the same data order (Loader's order
// depends only on its seed and the epoch).
//
//	ck := nn.Checkpoint{Model: model, Optimizer: opt, Scheduler: sched, Session: s}
//	ck.Step = step
//	err := ck.Save("run.safetensors")     // atomic: a crash leaves the old file or the new one
//	...
//	err = ck.Load("run.safetensors")      // ck.Step is the saved step
//
// Model and Session are required; Optimizer and Scheduler may be nil (then the file has none of
// theirs, and Load refuses a file that has them only if they are non-nil here and absent there).
type Checkpoint struct {
	Model     Module
	Optimizer StatefulOptimizer
	Scheduler Scheduler
	Session   *autograd.Session
	// Step is the caller's progress (steps or epochs done): saved by Save, set by Load.
	Step int
	// Meta is extra metadata (strings) saved with the checkpoint and read back by Load; keys
	// starting with "torchlean." are the checkpoint's own.
	Meta map[string]string
}

// Metadata keys of a checkpoint.
const (
	metaFormat    = "torchlean.checkpoint"
	metaStep      = "torchlean.step"
	metaSeed      = "torchlean.seed"
	metaDraws     = "torchlean.draws"
	metaLR        = "torchlean.lr"
	metaScheduler = "torchlean.scheduler"
	optimPrefix   = "optimizer."
)

// Save writes the checkpoint to path atomically (a temporary file in the same folder, fsync,
// rename: autograd.SaveTensorsFile), so that a crash during the write leaves the previous file
// whole (and, beside it, the unfinished temporary file ".<name>.<random>.tmp", which Load never
// reads: delete it at leisure).
func (c *Checkpoint) Save(path string) error {
	if c.Model == nil || c.Session == nil {
		return errors.New("nn: checkpoint: save needs a Model and a Session")
	}
	if err := c.Session.Err(); err != nil {
		return fmt.Errorf("nn: checkpoint: the session has an error: %w", err)
	}
	ts, err := StateDict(c.Model)
	if err != nil {
		return err
	}
	defer autograd.ReleaseTensors(ts)
	meta := map[string]string{}
	for k, v := range c.Meta {
		if strings.HasPrefix(k, "torchlean.") {
			return fmt.Errorf("nn: checkpoint: metadata key %q is reserved", k)
		}
		meta[k] = v
	}
	seed, draws := c.Session.RandomState()
	meta[metaFormat] = "1"
	meta[metaStep] = strconv.Itoa(c.Step)
	meta[metaSeed] = strconv.FormatUint(seed, 10)
	meta[metaDraws] = strconv.FormatUint(draws, 10)
	if c.Optimizer != nil {
		meta[metaLR] = strconv.FormatFloat(c.Optimizer.LR(), 'g', -1, 64)
		state, err := c.Optimizer.State()
		if err != nil {
			return fmt.Errorf("nn: checkpoint: %w", err)
		}
		defer releaseBuffers(state)
		named, err := optimizerTensors(c.Model, state)
		if err != nil {
			return err
		}
		maps.Copy(ts, named)
	}
	if c.Scheduler != nil {
		text, err := c.Scheduler.State().MarshalText()
		if err != nil {
			return fmt.Errorf("nn: checkpoint: %w", err)
		}
		meta[metaScheduler] = string(text)
	}
	return autograd.SaveTensorsFile(path, ts, meta)
}

// optimizerTensors keys the optimizer's state (keyed "<session parameter name>.<state>") by the
// model's keys, "optimizer.<key>.<state>", each buffer in its parameter's shape (a step count: a
// scalar). A state of a parameter outside the model is an error.
func optimizerTensors(m Module, state map[string]*ops.Buffer) (map[string]autograd.NamedTensor, error) {
	out := map[string]autograd.NamedTensor{}
	done := 0
	for _, np := range NamedParameters(m) {
		prefix := np.Param.Name() + "."
		for k, b := range state {
			suffix, ok := strings.CutPrefix(k, prefix)
			if !ok || strings.Contains(suffix, ".") {
				continue
			}
			shape := np.Param.Shape()
			if b.Len() != numel(shape) {
				shape = []int{} // the step count
				if b.Len() != 1 {
					return nil, fmt.Errorf("nn: checkpoint: optimizer state %s has %d values for a parameter of shape %v", k, b.Len(), np.Param.Shape())
				}
			}
			out[optimPrefix+np.Key+"."+suffix] = autograd.NamedTensor{Shape: shape, Buf: b}
			done++
		}
	}
	if done != len(state) {
		return nil, errors.New("nn: checkpoint: the optimizer has parameters outside the model")
	}
	return out, nil
}

func releaseBuffers(m map[string]*ops.Buffer) {
	for _, b := range m {
		b.Release()
	}
}

// Load reads a checkpoint Save wrote into c's model, optimizer, scheduler and session, and sets
// c.Step and c.Meta. Everything is checked before anything changes: a file of another
// architecture (a missing or unexpected key, a shape) is an error naming the first mismatch, as
// is a file without optimizer or scheduler state when c has them. The model must be built as
// the saved one, and the optimizer and scheduler with the same arguments (hyperparameters are
// not saved, but the learning rate is: Load sets it).
func (c *Checkpoint) Load(path string) error {
	if c.Model == nil || c.Session == nil {
		return errors.New("nn: checkpoint: load needs a Model and a Session")
	}
	ts, meta, err := autograd.LoadTensorsFile(path, ops.CPU())
	if err != nil {
		return err
	}
	defer autograd.ReleaseTensors(ts)
	fail := func(format string, args ...any) error {
		return fmt.Errorf("nn: checkpoint %s: %s", path, fmt.Sprintf(format, args...))
	}
	if meta[metaFormat] != "1" {
		return fail("not a checkpoint of this package (no %s metadata): load weights with LoadWeights", metaFormat)
	}
	step, err1 := strconv.Atoi(meta[metaStep])
	seed, err2 := strconv.ParseUint(meta[metaSeed], 10, 64)
	draws, err3 := strconv.ParseUint(meta[metaDraws], 10, 64)
	if err := errors.Join(err1, err2, err3); err != nil {
		return fail("bad metadata: %v", err)
	}
	if err := checkState(c.Model, ts, true, func(k string) bool { return strings.HasPrefix(k, optimPrefix) }); err != nil {
		return fmt.Errorf("nn: checkpoint %s: %w", path, err)
	}
	var sched SchedulerState
	if c.Scheduler != nil {
		text, ok := meta[metaScheduler]
		if !ok {
			return fail("no scheduler state")
		}
		if err := sched.UnmarshalText([]byte(text)); err != nil {
			return fail("%v", err)
		}
		if cur := c.Scheduler.State(); cur.Kind != sched.Kind {
			return fail("a %s scheduler's state for a %s scheduler", sched.Kind, cur.Kind)
		}
	}
	var lr float64
	if c.Optimizer != nil {
		if lr, err = strconv.ParseFloat(meta[metaLR], 64); err != nil || !(lr >= 0) || math.IsInf(lr, 0) {
			return fail("no optimizer learning rate (%q)", meta[metaLR])
		}
		state, err := optimizerState(c.Model, ts)
		if err != nil {
			return fail("%v", err)
		}
		err = c.Optimizer.LoadState(state)
		releaseBuffers(state)
		if err != nil {
			return fail("%v", err)
		}
	} else if slices.ContainsFunc(slices.Collect(maps.Keys(ts)), func(k string) bool { return strings.HasPrefix(k, optimPrefix) }) {
		return fail("the file has optimizer state and the checkpoint no Optimizer to load it into")
	}
	if err := loadState(c.Model, ts); err != nil {
		return err
	}
	if c.Optimizer != nil {
		c.Optimizer.SetLR(lr)
	}
	if c.Scheduler != nil {
		if err := c.Scheduler.LoadState(sched); err != nil {
			return fail("%v", err)
		}
	}
	c.Session.SetRandomState(seed, draws)
	c.Step = step
	c.Meta = map[string]string{}
	for k, v := range meta {
		if !strings.HasPrefix(k, "torchlean.") {
			c.Meta[k] = v
		}
	}
	return c.Session.Err()
}

// optimizerState returns the optimizer tensors of ts keyed as the optimizer's State keys them
// ("<session parameter name>.<state>"), flat, on the session's device (copies, the caller's).
func optimizerState(m Module, ts map[string]autograd.NamedTensor) (map[string]*ops.Buffer, error) {
	byKey := map[string]*autograd.Param{}
	for _, np := range NamedParameters(m) {
		byKey[np.Key] = np.Param
	}
	out := map[string]*ops.Buffer{}
	for _, k := range slices.Sorted(maps.Keys(ts)) {
		rest, ok := strings.CutPrefix(k, optimPrefix)
		if !ok {
			continue
		}
		dot := strings.LastIndexByte(rest, '.')
		p := byKey[rest[:max(dot, 0)]]
		if dot < 0 || p == nil {
			releaseBuffers(out)
			return nil, fmt.Errorf("optimizer state %s belongs to no parameter of the model", k)
		}
		b, err := ts[k].Buf.To(p.Session().Device())
		if err != nil {
			releaseBuffers(out)
			return nil, err
		}
		out[p.Name()+"."+rest[dot+1:]] = b
	}
	return out, nil
}
