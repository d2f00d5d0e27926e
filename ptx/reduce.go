package ptx

// Reduce is the whole-buffer sum (reduce.cu): sum_chunks(out, x, n, divisor), one block of 256
// threads per chunk of cpu.SumChunkLen elements.
const Reduce Module = "reduce"

// SumChunks reduces each chunk of x to one partial (cpu.SumChunks).
var SumChunks = newKernel(Reduce, "sum_chunks")
