package ops

import (
	"bufio"
	"os"
	"slices"
	"strings"
	"testing"
)

// pending marks a seed entry point that a later issue brings.
type pending string

// seedEntryPoints maps every native entry point of the seed documents (testdata/entrypoints.txt,
// a copy of shared/seeds/entrypoints.txt) to its Go counterpart, or to the issue that brings it.
var seedEntryPoints = map[string]any{
	"torchlean_cuda_allocator_alloc_count":                (*Device).Stats, // Stats.AllocCount
	"torchlean_cuda_allocator_device_free_bytes":          (*Device).Stats, // Stats.DeviceFree
	"torchlean_cuda_allocator_device_total_bytes":         (*Device).Stats, // Stats.DeviceTotal
	"torchlean_cuda_allocator_free_count":                 (*Device).Stats, // Stats.FreeCount
	"torchlean_cuda_allocator_live_bytes":                 (*Device).Stats, // Stats.LiveBytes
	"torchlean_cuda_allocator_peak_bytes":                 (*Device).Stats, // Stats.PeakBytes
	"torchlean_cuda_buffer_abs":                           Abs,
	"torchlean_cuda_buffer_abs_bwd":                       AbsBwd,
	"torchlean_cuda_buffer_add":                           Add,
	"torchlean_cuda_buffer_axpy":                          Axpy,
	"torchlean_cuda_buffer_bernoulli_mask":                BernoulliMask,
	"torchlean_cuda_buffer_bmm":                           Bmm,
	"torchlean_cuda_buffer_broadcast_to":                  BroadcastTo,
	"torchlean_cuda_buffer_broadcast_vec_to_cols":         BroadcastVecToCols,
	"torchlean_cuda_buffer_broadcast_vec_to_rows":         BroadcastVecToRows,
	"torchlean_cuda_buffer_clamp":                         Clamp,
	"torchlean_cuda_buffer_clamp_bwd":                     ClampBwd,
	"torchlean_cuda_buffer_concat1d":                      Concat1d,
	"torchlean_cuda_buffer_div":                           Div,
	"torchlean_cuda_buffer_exp":                           Exp,
	"torchlean_cuda_buffer_flash_attention_bwd_k":         FlashAttentionBwdK,
	"torchlean_cuda_buffer_flash_attention_bwd_q":         FlashAttentionBwdQ,
	"torchlean_cuda_buffer_flash_attention_bwd_v":         FlashAttentionBwdV,
	"torchlean_cuda_buffer_flash_attention_fwd":           FlashAttentionFwd,
	"torchlean_cuda_buffer_full":                          Full,
	"torchlean_cuda_buffer_gather_rows":                   GatherRows,
	"torchlean_cuda_buffer_gather_vec":                    GatherVec,
	"torchlean_cuda_buffer_inv":                           Inv,
	"torchlean_cuda_buffer_irfft1d_packed":                Irfft1dPacked,
	"torchlean_cuda_buffer_log":                           Log,
	"torchlean_cuda_buffer_max":                           Max,
	"torchlean_cuda_buffer_max_bwd":                       MaxBwd,
	"torchlean_cuda_buffer_min":                           Min,
	"torchlean_cuda_buffer_min_bwd":                       MinBwd,
	"torchlean_cuda_buffer_mul":                           Mul,
	"torchlean_cuda_buffer_of_float_array":                FromFloat64,
	"torchlean_cuda_buffer_of_float_array_with_token":     FromFloat64, // every upload is a distinct buffer
	"torchlean_cuda_buffer_rand_uniform":                  RandUniform,
	"torchlean_cuda_buffer_reduce_from_broadcast":         ReduceFromBroadcastTo,
	"torchlean_cuda_buffer_reduce_max_axis0":              ReduceMaxByColumn,
	"torchlean_cuda_buffer_reduce_max_axis1":              ReduceMaxByRow,
	"torchlean_cuda_buffer_reduce_mean":                   Mean,
	"torchlean_cuda_buffer_reduce_sum":                    Sum,
	"torchlean_cuda_buffer_reduce_sum_axis":               ReduceSumAxis,
	"torchlean_cuda_buffer_reduce_sum_axis0":              ReduceSumByColumn,
	"torchlean_cuda_buffer_reduce_sum_axis1":              ReduceSumByRow,
	"torchlean_cuda_buffer_release":                       (*Buffer).Release,
	"torchlean_cuda_buffer_release_then":                  ReleaseThen,
	"torchlean_cuda_buffer_relu":                          Relu,
	"torchlean_cuda_buffer_relu_bwd":                      ReluBwd,
	"torchlean_cuda_buffer_rfft1d_packed":                 Rfft1dPacked,
	"torchlean_cuda_buffer_scale":                         Scale,
	"torchlean_cuda_buffer_scatter_add":                   ScatterAdd,
	"torchlean_cuda_buffer_scatter_add_row":               ScatterAddRow,
	"torchlean_cuda_buffer_scatter_add_rows":              ScatterAddRows,
	"torchlean_cuda_buffer_selective_scan_diag_bwd":       SelectiveScanDiagBwd,
	"torchlean_cuda_buffer_selective_scan_diag_fwd":       SelectiveScanDiagFwd,
	"torchlean_cuda_buffer_selective_scan_diag_var_fwd":   SelectiveScanDiagVarFwd,
	"torchlean_cuda_buffer_size":                          (*Buffer).Len,
	"torchlean_cuda_buffer_slice1d":                       Slice1d,
	"torchlean_cuda_buffer_spectral_conv1d_rfft_bwd_wim":  SpectralConv1dRfftBwdWIm,
	"torchlean_cuda_buffer_spectral_conv1d_rfft_bwd_wre":  SpectralConv1dRfftBwdWRe,
	"torchlean_cuda_buffer_spectral_conv1d_rfft_bwd_x":    SpectralConv1dRfftBwdX,
	"torchlean_cuda_buffer_spectral_conv1d_rfft_fwd":      SpectralConv1dRfftFwd,
	"torchlean_cuda_buffer_sqrt":                          Sqrt,
	"torchlean_cuda_buffer_sqrt_bwd":                      SqrtBwd,
	"torchlean_cuda_buffer_sub":                           Sub,
	"torchlean_cuda_buffer_swap_adjacent_at_depth":        SwapAdjacentAtDepth,
	"torchlean_cuda_buffer_to_float_array":                (*Buffer).Float64s,
	"torchlean_cuda_buffer_transpose2d":                   Transpose2d,
	"torchlean_cuda_buffer_zeros":                         Zeros,
	"torchlean_cuda_get_deterministic_reductions_u":       Deterministic,
	"torchlean_cuda_set_deterministic_reductions":         SetDeterministic,
	"torchlean_cuda_set_deterministic_reductions_checked": SetDeterministicChecked,
	"torchlean_runtime_collect_allocator":                 (*Device).Collect,
}

func readEntryPoints(t *testing.T, path string) []string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var names []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if s := strings.TrimSpace(sc.Text()); s != "" {
			names = append(names, s)
		}
	}
	return names
}

func TestSeedEntryPoints(t *testing.T) {
	names := readEntryPoints(t, "testdata/entrypoints.txt")
	if shared := "../../shared/seeds/entrypoints.txt"; fileExists(shared) {
		if !slices.Equal(names, readEntryPoints(t, shared)) {
			t.Errorf("testdata/entrypoints.txt differs from %s: copy it again", shared)
		}
	}
	done := 0
	for _, name := range names {
		v, ok := seedEntryPoints[name]
		switch {
		case !ok:
			t.Errorf("seed entry point %s has no Go counterpart", name)
		case v == nil:
			t.Errorf("seed entry point %s maps to nil", name)
		default:
			if _, isPending := v.(pending); !isPending {
				done++
			}
		}
	}
	for name := range seedEntryPoints {
		if !slices.Contains(names, name) {
			t.Errorf("table entry %s is not a seed entry point", name)
		}
	}
	t.Logf("%d of %d seed entry points implemented", done, len(names))
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}
