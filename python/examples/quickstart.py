import sylva

ps = sylva.ParameterSet("float32", seed=1)
ps.add("E", [10, 8], sylva.Init.uniform(-0.1, 0.1))
ps.add("W", [24, 8], sylva.Init.glorot())
ps.add("Wo", [8, 2], sylva.Init.glorot())

f = sylva.VertexFunction("tree_fc", message_width=8)  # h = relu([x; h_l; h_r]·W)
h = sylva.relu(sylva.concat([f.pull(8), f.gather(0), f.gather(1)]) @ f.param(ps["W"]))
f.scatter(h)  # message to the parent
f.push(h)     # output of this vertex

p = sylva.Program()  # static parts around the dynamic one
hs = p.apply(f, sylva.lookup(p.param(ps["E"]), p.input_ids("words")))
loss = sylva.softmax_cross_entropy(hs @ p.param(ps["Wo"]), p.input_ids("labels"))

tree = sylva.InputGraph.from_children([[], [], [0, 1]])  # two leaves, one root
tree.set_ids("words", [3, 7, -1])
tree.set_ids("labels", [-1, -1, 1])
trainer = sylva.Trainer(p, ps, loss, sylva.Adam(lr=0.01))
for step in range(5):
    print(f"step {step}: loss {trainer.step(sylva.GraphBatch([tree])).loss:.4f}")
