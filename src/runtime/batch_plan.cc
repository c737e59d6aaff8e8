// The base of a minibatch's plan (its row tables), the pipeline of passes
// that completes it, and its text form. The passes live in files of their
// own: batch_absences.cc, batch_message_writes.cc, batch_children_blocks.cc.
#include "sylva/runtime/batch_plan.h"

#include <algorithm>
#include <sstream>

#include "sylva/core/error.h"

namespace sylva {

namespace {

// Empties every table of `p`, keeping its memory, and resets every fact.
BatchPlan emptied(BatchPlan p) {
  p.rows = p.task_rows = 0;
  p.tasks.clear();
  for (std::vector<int32_t>* t : {&p.reduce_offsets, &p.reduce_src, &p.reduce_dst, &p.pull_rows, &p.unwritten_rows,
                                  &p.children.first_child, &p.children.blocked})
    t->clear();
  for (std::vector<int32_t>& t : p.child_rows) t.clear();
  p.absence.clear();
  p.write_message_grads = false;
  p.children.in_place = false;
  p.children.nodes = {};
  p.children.concat_rows = 0;
  p.task_local_rows_f.clear();
  p.task_local_rows_b.clear();
  return p;
}

}  // namespace

BatchPlan plan_rows(const plan::VertexPlan& vp, const GraphBatch& batch, const Schedule& schedule,
                    std::span<const int32_t> pull_ids, bool pull_from_table, BatchPlan storage) {
  const ir::Graph& g = *vp.forward.graph;
  const int64_t max_read = g.max_children_read();
  if (max_read >= 0 && batch.max_arity() > max_read) {
    for (int32_t v = 0; v < batch.num_vertices(); ++v)
      SYLVA_CHECK(static_cast<int64_t>(batch.children(v).size()) <= max_read, "[apply] ", batch.describe_vertex(v),
                  " has ", batch.children(v).size(), " children but vertex function '", g.name(), "' reads at most ",
                  max_read, " (gather slots 0..", max_read - 1, "); use gather_reduce() for any arity");
  }
  BatchPlan p = emptied(std::move(storage));
  const int64_t rows = schedule.num_rows();
  p.rows = rows;
  p.tasks = schedule.tasks;
  p.task_rows = 0;
  for (const Task& t : schedule.tasks) p.task_rows = std::max(p.task_rows, t.bs);
  // Gather tables in row order: one contiguous span per task. F may use
  // gather(i) and gather_reduce() together: tables for both.
  p.child_rows.resize(static_cast<size_t>(vp.gather_slots));
  for (int64_t slot = 0; slot < vp.gather_slots; ++slot) {
    auto& t = p.child_rows[static_cast<size_t>(slot)];
    t.resize(static_cast<size_t>(rows));
    for (int64_t r = 0; r < rows; ++r) {
      auto ch = batch.children(schedule.vertex_of_row[static_cast<size_t>(r)]);
      t[static_cast<size_t>(r)] = slot < static_cast<int64_t>(ch.size()) && ch[static_cast<size_t>(slot)] >= 0
                                      ? schedule.row_of_vertex[static_cast<size_t>(ch[static_cast<size_t>(slot)])]
                                      : -1;
    }
  }
  if (vp.gathers_all) {
    p.reduce_offsets.assign(static_cast<size_t>(rows) + 1, 0);
    for (int64_t r = 0; r < rows; ++r) {
      for (int32_t c : batch.children(schedule.vertex_of_row[static_cast<size_t>(r)]))
        if (c >= 0) {
          p.reduce_src.push_back(schedule.row_of_vertex[static_cast<size_t>(c)]);
          p.reduce_dst.push_back(static_cast<int32_t>(r));
        }
      p.reduce_offsets[static_cast<size_t>(r) + 1] = static_cast<int32_t>(p.reduce_src.size());
    }
  }
  if (pull_from_table) {  // row r pulls the table's row of its vertex's id
    SYLVA_ASSERT(!pull_ids.empty(), "a pull from a table without ids");
    for (int64_t r = 0; r < rows; ++r)
      p.pull_rows.push_back(pull_ids[static_cast<size_t>(schedule.vertex_of_row[static_cast<size_t>(r)])]);
  }
  return p;
}

BatchPlan build_batch_plan(const plan::VertexPlan& vp, const BatchPlanInputs& in, Optimisations on,
                           BatchPlan storage) {
  BatchPlan p = plan_rows(vp, in.batch, in.schedule, in.pull_ids, in.pull_from_table, std::move(storage));
  // The absences are read with skip_zero_work only, but cost one pass over the rows: always there.
  p = plan_absences(std::move(p), in.schedule, in.pull_ids);
  p = plan_message_writes(std::move(p), vp);
  if (in.row_windows && on.has(Optimisation::children_in_place) && on.has(Optimisation::skip_zero_work))
    p = plan_children_blocks(std::move(p), vp);
  if (in.facts && on.has(Optimisation::task_local_values)) p = plan_task_local_rows(std::move(p), vp, *in.facts);
  return p;
}

std::string BatchPlan::to_text() const {
  std::ostringstream os;
  os << "batch plan: " << rows << " rows in " << tasks.size() << " tasks (largest " << task_rows << "), "
     << child_rows.size() << " gather slots" << (reduce_offsets.empty() ? "" : ", gather_reduce")
     << (pull_rows.empty() ? "" : ", pulls from the table") << "\n"
     << "  message gradients: "
     << (write_message_grads ? "written (one writer per row), " + std::to_string(unwritten_rows.size()) +
                                   " rows without a writer zeroed"
                             : std::string("added into zeros"))
     << "\n"
     << "  children in place: ";
  if (children.in_place) {
    os << "yes (concat %" << children.nodes.concat << ", gradient %" << children.nodes.grad << "; "
       << children.blocked.back() << " rows read their children in place; the concat keeps " << children.concat_rows
       << " rows)\n";
  } else {
    os << "no\n";
  }
  if (!task_local_rows_f.empty() || !task_local_rows_b.empty()) {
    os << "  task-local rows (largest task that writes each):";
    for (int pass = 0; pass < 2; ++pass) {
      const std::vector<int64_t>& rows_of = pass == 0 ? task_local_rows_f : task_local_rows_b;
      for (size_t i = 0; i < rows_of.size(); ++i)
        if (rows_of[i] > 0) os << " " << (pass == 0 ? "F" : "dF") << " %" << i << " " << rows_of[i] << ",";
    }
    os << " the largest task " << task_rows << "\n";
  }
  for (size_t ti = 0; ti < tasks.size(); ++ti) {
    const Task& t = tasks[ti];
    os << "  task " << ti << ": rows [" << t.offset << ", " << t.offset + t.bs << ")";
    if (ti < absence.size()) {
      const Absence& a = absence[ti];
      std::string lacks;
      for (size_t s = 0; s < std::min<size_t>(child_rows.size(), 64); ++s)
        if (a.slots >> s & 1u) lacks += (lacks.empty() ? "" : ", ") + std::string("slot ") + std::to_string(s);
      if (a.no_children) lacks += std::string(lacks.empty() ? "" : ", ") + "every child";
      if (a.pull_grad_unused) lacks += std::string(lacks.empty() ? "" : ", ") + "pulled rows (id -1)";
      if (!lacks.empty()) os << "; absent: " << lacks;
    }
    os << "\n";
  }
  return os.str();
}

}  // namespace sylva
