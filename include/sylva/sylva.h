// Sylva: the umbrella header. Includes every public header (CPU-only
// types; the CUDA backend is chosen at link time and adds no types here).
//
// @code
// #include <sylva/sylva.h>
// @endcode
#pragma once

// What this build has (SYLVA_WITH_COSA: CoSA and the static CNN path).
#include "sylva/config.h"

// core
#include "sylva/core/bfloat16.h"
#include "sylva/core/buffer.h"
#include "sylva/core/denormals.h"
#include "sylva/core/device.h"
#include "sylva/core/dtype.h"
#include "sylva/core/dynamic_tensor.h"
#include "sylva/core/error.h"
#include "sylva/core/log.h"
#include "sylva/core/shape.h"
#include "sylva/core/tensor.h"

// ir
#include "sylva/ir/graph.h"
#include "sylva/ir/op.h"

// frontend
#include "sylva/frontend/parameter_set.h"
#include "sylva/frontend/program.h"
#include "sylva/frontend/symbol.h"
#include "sylva/frontend/vertex_function.h"

// passes
#include "sylva/passes/autodiff.h"
#include "sylva/passes/fusion.h"

// sched
#include "sylva/sched/ios.h"
#include "sylva/sched/ios_graph.h"
#include "sylva/sched/ios_ir.h"
#if SYLVA_WITH_COSA
#include "sylva/sched/cosa.h"
#include "sylva/sched/cosa_cpu.h"
#include "sylva/sched/cosa_kernel.h"
#endif

// backend
#include "sylva/backend/backend.h"
#include "sylva/backend/cnn_kernels.h"

// graph (the static CNN path, with CoSA: SYLVA_BUILD_COSA)
#if SYLVA_WITH_COSA
#include "sylva/graph/cnn.h"
#endif

// runtime
#include "sylva/runtime/executor.h"
#include "sylva/runtime/graph_batch.h"
#include "sylva/runtime/input_graph.h"
#include "sylva/runtime/options.h"
#include "sylva/runtime/param_store.h"
#include "sylva/runtime/profiler.h"
#include "sylva/runtime/schedule.h"

// train
#include "sylva/dist/communicator.h"
#include "sylva/dist/shard.h"
#include "sylva/train/checkpoint.h"
#include "sylva/train/generators.h"
#include "sylva/train/metrics.h"
#include "sylva/train/optimizer.h"
#include "sylva/train/readers.h"
#include "sylva/train/trainer.h"
#include "sylva/train/vocabulary.h"
#include "sylva/train/word_vectors.h"
