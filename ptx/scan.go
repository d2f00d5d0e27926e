package ptx

// Scan is the selective scan (diagonal state-space model) family (scan.cu; cpu/scan.go): one
// thread per (batch, state) channel, grid-stride over batch*state, sequential over time;
// parameters (destinations, A, B, X, h0[, out, dY], batch, seqLen, state).
const Scan Module = "scan"

// Selective-scan kernels: the forwards and backwards with coefficients constant over time and
// time-varying ("var"), and the fixed-order sum over the batch of the constant form's per-channel
// coefficient gradients.
var (
	SelectiveScanDiagFwd    = newKernel(Scan, "selective_scan_diag_fwd")
	SelectiveScanDiagVarFwd = newKernel(Scan, "selective_scan_diag_var_fwd")
	SelectiveScanDiagBwd    = newKernel(Scan, "selective_scan_diag_bwd")
	SelectiveScanDiagVarBwd = newKernel(Scan, "selective_scan_diag_var_bwd")
	SelectiveScanSumBatch   = newKernel(Scan, "selective_scan_sum_batch")
)
