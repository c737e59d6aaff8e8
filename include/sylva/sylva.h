// Sylva: the umbrella header. Includes every public header (CPU-only
// types; the CUDA backend is chosen at link time and adds no types here).
//
// @code
// #include <sylva/sylva.h>
// @endcode
#pragma once

// core
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
#include "sylva/sched/cosa.h"
#include "sylva/sched/cosa_cpu.h"
#include "sylva/sched/cosa_kernel.h"
#include "sylva/sched/ios_graph.h"
#include "sylva/sched/ios_ir.h"

// backend
#include "sylva/backend/backend.h"
#include "sylva/backend/cnn_kernels.h"

// graph
#include "sylva/graph/cnn.h"

// runtime
#include "sylva/runtime/executor.h"
#include "sylva/train/generators.h"
#include "sylva/runtime/graph_batch.h"
#include "sylva/runtime/input_graph.h"
#include "sylva/runtime/param_store.h"
#include "sylva/runtime/profiler.h"
#include "sylva/train/readers.h"
#include "sylva/runtime/schedule.h"
#include "sylva/train/vocabulary.h"

// train
#include "sylva/dist/communicator.h"
#include "sylva/dist/shard.h"
#include "sylva/train/checkpoint.h"
#include "sylva/train/metrics.h"
#include "sylva/train/optimizer.h"
#include "sylva/train/trainer.h"
#include "sylva/train/word_vectors.h"
