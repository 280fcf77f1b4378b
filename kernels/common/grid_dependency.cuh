/*
 * Programmatic dependent launch (PTX griddepcontrol, sm_90 and later). A
 * grid launched with programmatic stream serialization may be scheduled
 * while the stream's previous grid still runs, once every CTA of that grid
 * has called griddep_launch_dependents or exited; it must call griddep_wait
 * before it touches global memory the previous grid writes (or reads).
 * Without the launch attribute both are no-ops.
 */
#pragma once

namespace mgpu {

/* Lets the stream's next grid be scheduled (this CTA's share of the signal). */
__device__ __forceinline__ void griddep_launch_dependents()
{
    asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory");
}

/* Waits until the grids this one depends on have completed and their memory
 * operations are visible. */
__device__ __forceinline__ void griddep_wait()
{
    asm volatile("griddepcontrol.wait;\n" ::: "memory");
}

} // namespace mgpu
