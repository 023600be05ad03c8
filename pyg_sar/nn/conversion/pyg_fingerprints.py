"""Fingerprints of the PyG code the zoo verified (generated: do not edit).

Written by ``python -m pyg_sar.nn.fingerprints --write --zoo-results FILE ...`` after the
zoo verified the installed torch_geometric; read by :mod:`pyg_sar.nn.fingerprints`. Per class,
its verified sets of function fingerprints, each with the torch_geometric versions it was
verified on. Versions: 2.8.1, 2.9.0.dev20261027.
"""
# ruff: noqa: E501
FINGERPRINTS = {
 "format": 1,
 "classes": {
  "torch_geometric.nn.aggr.attention.AttentionalAggregation": [
   {
    "verified_on": ["2.8.1", "2.9.0.dev20261027"],
    "functions": {
     "torch_geometric.nn.aggr.attention.AttentionalAggregation.__init__": "946328e292c1fc6b",
     "torch_geometric.nn.aggr.attention.AttentionalAggregation.forward": "7cad64bff779d9da",
     "torch_geometric.nn.aggr.base.Aggregation.__call__": "c99b85959bf5c4c1",
     "torch_geometric.nn.aggr.base.Aggregation.assert_index_present": "0f156b5a843262dd",
     "torch_geometric.nn.aggr.base.Aggregation.assert_sorted_index": "146ecd3a9aea91a4",
     "torch_geometric.nn.aggr.base.Aggregation.assert_two_dimensional_input": "69ee2bfe5535ed73",
     "torch_geometric.nn.aggr.base.Aggregation.reduce": "684f925c6c0a126e",
     "torch_geometric.nn.aggr.base.Aggregation.to_dense_batch": "87311dc30eb55854",
     "torch_geometric.nn.aggr.base.expand_left": "df308bcb89c96ca2",
     "torch_geometric.utils._scatter.broadcast": "01eaf980bf11f755",
     "torch_geometric.utils._scatter.scatter": "60a748ab45d2266f",
     "torch_geometric.utils._segment._torch_segment": "ca55b06f84d67aba",
     "torch_geometric.utils._segment.segment": "120b6d805e10484a",
     "torch_geometric.utils._softmax.softmax": "526253f0458ea923",
     "torch_geometric.utils._to_dense_batch.to_dense_batch": "760fca67c82e3fee",
     "torch_geometric.utils.functions.cumsum": "c3b42cafaf31cfa3",
     "torch_geometric.utils.num_nodes.maybe_num_nodes": "d818e742b4dd1dfc"
    }
   }
  ],
  "torch_geometric.nn.aggr.basic.MaxAggregation": [
   {
    "verified_on": ["2.8.1", "2.9.0.dev20261027"],
    "functions": {
     "torch_geometric.nn.aggr.base.Aggregation.__call__": "c99b85959bf5c4c1",
     "torch_geometric.nn.aggr.base.Aggregation.__init__": "65c18742c139d7f2",
     "torch_geometric.nn.aggr.base.Aggregation.assert_index_present": "0f156b5a843262dd",
     "torch_geometric.nn.aggr.base.Aggregation.assert_sorted_index": "146ecd3a9aea91a4",
     "torch_geometric.nn.aggr.base.Aggregation.assert_two_dimensional_input": "69ee2bfe5535ed73",
     "torch_geometric.nn.aggr.base.Aggregation.reduce": "684f925c6c0a126e",
     "torch_geometric.nn.aggr.base.Aggregation.to_dense_batch": "87311dc30eb55854",
     "torch_geometric.nn.aggr.base.expand_left": "df308bcb89c96ca2",
     "torch_geometric.nn.aggr.basic.MaxAggregation.forward": "cf079a342412d34b",
     "torch_geometric.utils._scatter.broadcast": "01eaf980bf11f755",
     "torch_geometric.utils._scatter.scatter": "60a748ab45d2266f",
     "torch_geometric.utils._segment._torch_segment": "ca55b06f84d67aba",
     "torch_geometric.utils._segment.segment": "120b6d805e10484a",
     "torch_geometric.utils._to_dense_batch.to_dense_batch": "760fca67c82e3fee",
     "torch_geometric.utils.functions.cumsum": "c3b42cafaf31cfa3"
    }
   }
  ],
  "torch_geometric.nn.aggr.basic.MeanAggregation": [
   {
    "verified_on": ["2.8.1", "2.9.0.dev20261027"],
    "functions": {
     "torch_geometric.nn.aggr.base.Aggregation.__call__": "c99b85959bf5c4c1",
     "torch_geometric.nn.aggr.base.Aggregation.__init__": "65c18742c139d7f2",
     "torch_geometric.nn.aggr.base.Aggregation.assert_index_present": "0f156b5a843262dd",
     "torch_geometric.nn.aggr.base.Aggregation.assert_sorted_index": "146ecd3a9aea91a4",
     "torch_geometric.nn.aggr.base.Aggregation.assert_two_dimensional_input": "69ee2bfe5535ed73",
     "torch_geometric.nn.aggr.base.Aggregation.reduce": "684f925c6c0a126e",
     "torch_geometric.nn.aggr.base.Aggregation.to_dense_batch": "87311dc30eb55854",
     "torch_geometric.nn.aggr.base.expand_left": "df308bcb89c96ca2",
     "torch_geometric.nn.aggr.basic.MeanAggregation.forward": "e1583902f0e6402b",
     "torch_geometric.utils._scatter.broadcast": "01eaf980bf11f755",
     "torch_geometric.utils._scatter.scatter": "60a748ab45d2266f",
     "torch_geometric.utils._segment._torch_segment": "ca55b06f84d67aba",
     "torch_geometric.utils._segment.segment": "120b6d805e10484a",
     "torch_geometric.utils._to_dense_batch.to_dense_batch": "760fca67c82e3fee",
     "torch_geometric.utils.functions.cumsum": "c3b42cafaf31cfa3"
    }
   }
  ],
  "torch_geometric.nn.aggr.basic.MinAggregation": [
   {
    "verified_on": ["2.8.1", "2.9.0.dev20261027"],
    "functions": {
     "torch_geometric.nn.aggr.base.Aggregation.__call__": "c99b85959bf5c4c1",
     "torch_geometric.nn.aggr.base.Aggregation.__init__": "65c18742c139d7f2",
     "torch_geometric.nn.aggr.base.Aggregation.assert_index_present": "0f156b5a843262dd",
     "torch_geometric.nn.aggr.base.Aggregation.assert_sorted_index": "146ecd3a9aea91a4",
     "torch_geometric.nn.aggr.base.Aggregation.assert_two_dimensional_input": "69ee2bfe5535ed73",
     "torch_geometric.nn.aggr.base.Aggregation.reduce": "684f925c6c0a126e",
     "torch_geometric.nn.aggr.base.Aggregation.to_dense_batch": "87311dc30eb55854",
     "torch_geometric.nn.aggr.base.expand_left": "df308bcb89c96ca2",
     "torch_geometric.nn.aggr.basic.MinAggregation.forward": "e17af302740404e8",
     "torch_geometric.utils._scatter.broadcast": "01eaf980bf11f755",
     "torch_geometric.utils._scatter.scatter": "60a748ab45d2266f",
     "torch_geometric.utils._segment._torch_segment": "ca55b06f84d67aba",
     "torch_geometric.utils._segment.segment": "120b6d805e10484a",
     "torch_geometric.utils._to_dense_batch.to_dense_batch": "760fca67c82e3fee",
     "torch_geometric.utils.functions.cumsum": "c3b42cafaf31cfa3"
    }
   }
  ],
  "torch_geometric.nn.aggr.basic.MulAggregation": [
   {
    "verified_on": ["2.8.1", "2.9.0.dev20261027"],
    "functions": {
     "torch_geometric.nn.aggr.base.Aggregation.__call__": "c99b85959bf5c4c1",
     "torch_geometric.nn.aggr.base.Aggregation.__init__": "65c18742c139d7f2",
     "torch_geometric.nn.aggr.base.Aggregation.assert_index_present": "0f156b5a843262dd",
     "torch_geometric.nn.aggr.base.Aggregation.assert_sorted_index": "146ecd3a9aea91a4",
     "torch_geometric.nn.aggr.base.Aggregation.assert_two_dimensional_input": "69ee2bfe5535ed73",
     "torch_geometric.nn.aggr.base.Aggregation.reduce": "684f925c6c0a126e",
     "torch_geometric.nn.aggr.base.Aggregation.to_dense_batch": "87311dc30eb55854",
     "torch_geometric.nn.aggr.base.expand_left": "df308bcb89c96ca2",
     "torch_geometric.nn.aggr.basic.MulAggregation.forward": "f2ccb2a7faea0fe8",
     "torch_geometric.utils._scatter.broadcast": "01eaf980bf11f755",
     "torch_geometric.utils._scatter.scatter": "60a748ab45d2266f",
     "torch_geometric.utils._segment._torch_segment": "ca55b06f84d67aba",
     "torch_geometric.utils._segment.segment": "120b6d805e10484a",
     "torch_geometric.utils._to_dense_batch.to_dense_batch": "760fca67c82e3fee",
     "torch_geometric.utils.functions.cumsum": "c3b42cafaf31cfa3"
    }
   }
  ],
  "torch_geometric.nn.aggr.basic.PowerMeanAggregation": [
   {
    "verified_on": ["2.8.1", "2.9.0.dev20261027"],
    "functions": {
     "torch_geometric.nn.aggr.base.Aggregation.__call__": "c99b85959bf5c4c1",
     "torch_geometric.nn.aggr.base.Aggregation.assert_index_present": "0f156b5a843262dd",
     "torch_geometric.nn.aggr.base.Aggregation.assert_sorted_index": "146ecd3a9aea91a4",
     "torch_geometric.nn.aggr.base.Aggregation.assert_two_dimensional_input": "69ee2bfe5535ed73",
     "torch_geometric.nn.aggr.base.Aggregation.reduce": "684f925c6c0a126e",
     "torch_geometric.nn.aggr.base.Aggregation.to_dense_batch": "87311dc30eb55854",
     "torch_geometric.nn.aggr.base.expand_left": "df308bcb89c96ca2",
     "torch_geometric.nn.aggr.basic.PowerMeanAggregation.__init__": "5a8c8cb45bcae76b",
     "torch_geometric.nn.aggr.basic.PowerMeanAggregation.forward": "bb848bda137675fa",
     "torch_geometric.utils._scatter.broadcast": "01eaf980bf11f755",
     "torch_geometric.utils._scatter.scatter": "60a748ab45d2266f",
     "torch_geometric.utils._segment._torch_segment": "ca55b06f84d67aba",
     "torch_geometric.utils._segment.segment": "120b6d805e10484a",
     "torch_geometric.utils._to_dense_batch.to_dense_batch": "760fca67c82e3fee",
     "torch_geometric.utils.functions.cumsum": "c3b42cafaf31cfa3"
    }
   }
  ],
  "torch_geometric.nn.aggr.basic.SoftmaxAggregation": [
   {
    "verified_on": ["2.8.1", "2.9.0.dev20261027"],
    "functions": {
     "torch_geometric.nn.aggr.base.Aggregation.__call__": "c99b85959bf5c4c1",
     "torch_geometric.nn.aggr.base.Aggregation.assert_index_present": "0f156b5a843262dd",
     "torch_geometric.nn.aggr.base.Aggregation.assert_sorted_index": "146ecd3a9aea91a4",
     "torch_geometric.nn.aggr.base.Aggregation.assert_two_dimensional_input": "69ee2bfe5535ed73",
     "torch_geometric.nn.aggr.base.Aggregation.reduce": "684f925c6c0a126e",
     "torch_geometric.nn.aggr.base.Aggregation.to_dense_batch": "87311dc30eb55854",
     "torch_geometric.nn.aggr.base.expand_left": "df308bcb89c96ca2",
     "torch_geometric.nn.aggr.basic.SoftmaxAggregation.__init__": "280fbac9aaad22d2",
     "torch_geometric.nn.aggr.basic.SoftmaxAggregation.forward": "481710c5d1dcb4b4",
     "torch_geometric.utils._scatter.broadcast": "01eaf980bf11f755",
     "torch_geometric.utils._scatter.scatter": "60a748ab45d2266f",
     "torch_geometric.utils._segment._torch_segment": "ca55b06f84d67aba",
     "torch_geometric.utils._segment.segment": "120b6d805e10484a",
     "torch_geometric.utils._softmax.softmax": "526253f0458ea923",
     "torch_geometric.utils._to_dense_batch.to_dense_batch": "760fca67c82e3fee",
     "torch_geometric.utils.functions.cumsum": "c3b42cafaf31cfa3",
     "torch_geometric.utils.num_nodes.maybe_num_nodes": "d818e742b4dd1dfc"
    }
   }
  ],
  "torch_geometric.nn.aggr.basic.StdAggregation": [
   {
    "verified_on": ["2.8.1", "2.9.0.dev20261027"],
    "functions": {
     "torch_geometric.nn.aggr.base.Aggregation.__call__": "c99b85959bf5c4c1",
     "torch_geometric.nn.aggr.base.Aggregation.assert_index_present": "0f156b5a843262dd",
     "torch_geometric.nn.aggr.base.Aggregation.assert_sorted_index": "146ecd3a9aea91a4",
     "torch_geometric.nn.aggr.base.Aggregation.assert_two_dimensional_input": "69ee2bfe5535ed73",
     "torch_geometric.nn.aggr.base.Aggregation.reduce": "684f925c6c0a126e",
     "torch_geometric.nn.aggr.base.Aggregation.to_dense_batch": "87311dc30eb55854",
     "torch_geometric.nn.aggr.base.expand_left": "df308bcb89c96ca2",
     "torch_geometric.nn.aggr.basic.StdAggregation.__init__": "829ce145b87d039c",
     "torch_geometric.nn.aggr.basic.StdAggregation.forward": "bb623a7ae5156ee2",
     "torch_geometric.utils._scatter.broadcast": "01eaf980bf11f755",
     "torch_geometric.utils._scatter.scatter": "60a748ab45d2266f",
     "torch_geometric.utils._segment._torch_segment": "ca55b06f84d67aba",
     "torch_geometric.utils._segment.segment": "120b6d805e10484a",
     "torch_geometric.utils._to_dense_batch.to_dense_batch": "760fca67c82e3fee",
     "torch_geometric.utils.functions.cumsum": "c3b42cafaf31cfa3"
    }
   }
  ],
  "torch_geometric.nn.aggr.basic.SumAggregation": [
   {
    "verified_on": ["2.8.1", "2.9.0.dev20261027"],
    "functions": {
     "torch_geometric.nn.aggr.base.Aggregation.__call__": "c99b85959bf5c4c1",
     "torch_geometric.nn.aggr.base.Aggregation.__init__": "65c18742c139d7f2",
     "torch_geometric.nn.aggr.base.Aggregation.assert_index_present": "0f156b5a843262dd",
     "torch_geometric.nn.aggr.base.Aggregation.assert_sorted_index": "146ecd3a9aea91a4",
     "torch_geometric.nn.aggr.base.Aggregation.assert_two_dimensional_input": "69ee2bfe5535ed73",
     "torch_geometric.nn.aggr.base.Aggregation.reduce": "684f925c6c0a126e",
     "torch_geometric.nn.aggr.base.Aggregation.to_dense_batch": "87311dc30eb55854",
     "torch_geometric.nn.aggr.base.expand_left": "df308bcb89c96ca2",
     "torch_geometric.nn.aggr.basic.SumAggregation.forward": "171863c866e7be7c",
     "torch_geometric.utils._scatter.broadcast": "01eaf980bf11f755",
     "torch_geometric.utils._scatter.scatter": "60a748ab45d2266f",
     "torch_geometric.utils._segment._torch_segment": "ca55b06f84d67aba",
     "torch_geometric.utils._segment.segment": "120b6d805e10484a",
     "torch_geometric.utils._to_dense_batch.to_dense_batch": "760fca67c82e3fee",
     "torch_geometric.utils.functions.cumsum": "c3b42cafaf31cfa3"
    }
   }
  ],
  "torch_geometric.nn.aggr.basic.VarAggregation": [
   {
    "verified_on": ["2.8.1", "2.9.0.dev20261027"],
    "functions": {
     "torch_geometric.nn.aggr.base.Aggregation.__call__": "c99b85959bf5c4c1",
     "torch_geometric.nn.aggr.base.Aggregation.assert_index_present": "0f156b5a843262dd",
     "torch_geometric.nn.aggr.base.Aggregation.assert_sorted_index": "146ecd3a9aea91a4",
     "torch_geometric.nn.aggr.base.Aggregation.assert_two_dimensional_input": "69ee2bfe5535ed73",
     "torch_geometric.nn.aggr.base.Aggregation.reduce": "684f925c6c0a126e",
     "torch_geometric.nn.aggr.base.Aggregation.to_dense_batch": "87311dc30eb55854",
     "torch_geometric.nn.aggr.base.expand_left": "df308bcb89c96ca2",
     "torch_geometric.nn.aggr.basic.VarAggregation.__init__": "a517c84ce39ffe34",
     "torch_geometric.nn.aggr.basic.VarAggregation.forward": "a2bc385233fba34b",
     "torch_geometric.utils._scatter.broadcast": "01eaf980bf11f755",
     "torch_geometric.utils._scatter.scatter": "60a748ab45d2266f",
     "torch_geometric.utils._segment._torch_segment": "ca55b06f84d67aba",
     "torch_geometric.utils._segment.segment": "120b6d805e10484a",
     "torch_geometric.utils._to_dense_batch.to_dense_batch": "760fca67c82e3fee",
     "torch_geometric.utils.functions.cumsum": "c3b42cafaf31cfa3"
    }
   }
  ],
  "torch_geometric.nn.aggr.deep_sets.DeepSetsAggregation": [
   {
    "verified_on": ["2.8.1", "2.9.0.dev20261027"],
    "functions": {
     "torch_geometric.nn.aggr.base.Aggregation.__call__": "c99b85959bf5c4c1",
     "torch_geometric.nn.aggr.base.Aggregation.assert_index_present": "0f156b5a843262dd",
     "torch_geometric.nn.aggr.base.Aggregation.assert_sorted_index": "146ecd3a9aea91a4",
     "torch_geometric.nn.aggr.base.Aggregation.assert_two_dimensional_input": "69ee2bfe5535ed73",
     "torch_geometric.nn.aggr.base.Aggregation.reduce": "684f925c6c0a126e",
     "torch_geometric.nn.aggr.base.Aggregation.to_dense_batch": "87311dc30eb55854",
     "torch_geometric.nn.aggr.base.expand_left": "df308bcb89c96ca2",
     "torch_geometric.nn.aggr.deep_sets.DeepSetsAggregation.__init__": "3083246892f727d1",
     "torch_geometric.nn.aggr.deep_sets.DeepSetsAggregation.forward": "46ff30540b79b669",
     "torch_geometric.utils._scatter.broadcast": "01eaf980bf11f755",
     "torch_geometric.utils._scatter.scatter": "60a748ab45d2266f",
     "torch_geometric.utils._segment._torch_segment": "ca55b06f84d67aba",
     "torch_geometric.utils._segment.segment": "120b6d805e10484a",
     "torch_geometric.utils._to_dense_batch.to_dense_batch": "760fca67c82e3fee",
     "torch_geometric.utils.functions.cumsum": "c3b42cafaf31cfa3"
    }
   }
  ],
  "torch_geometric.nn.aggr.multi.MultiAggregation": [
   {
    "verified_on": ["2.8.1", "2.9.0.dev20261027"],
    "functions": {
     "torch_geometric.nn.aggr.base.Aggregation.__call__": "c99b85959bf5c4c1",
     "torch_geometric.nn.aggr.base.Aggregation.assert_index_present": "0f156b5a843262dd",
     "torch_geometric.nn.aggr.base.Aggregation.assert_sorted_index": "146ecd3a9aea91a4",
     "torch_geometric.nn.aggr.base.Aggregation.assert_two_dimensional_input": "69ee2bfe5535ed73",
     "torch_geometric.nn.aggr.base.Aggregation.reduce": "684f925c6c0a126e",
     "torch_geometric.nn.aggr.base.Aggregation.to_dense_batch": "87311dc30eb55854",
     "torch_geometric.nn.aggr.base.expand_left": "df308bcb89c96ca2",
     "torch_geometric.nn.aggr.multi.MultiAggregation.__init__": "be7681c2523d5560",
     "torch_geometric.nn.aggr.multi.MultiAggregation.combine": "b3bee99057f20e85",
     "torch_geometric.nn.aggr.multi.MultiAggregation.forward": "46432946bdebfbe0",
     "torch_geometric.nn.aggr.multi.MultiAggregation.get_out_channels": "4cbd3f2c7f372167",
     "torch_geometric.nn.resolver.aggregation_resolver": "cc0cbf56bb0e38da",
     "torch_geometric.utils._scatter.broadcast": "01eaf980bf11f755",
     "torch_geometric.utils._scatter.scatter": "60a748ab45d2266f",
     "torch_geometric.utils._segment._torch_segment": "ca55b06f84d67aba",
     "torch_geometric.utils._segment.segment": "120b6d805e10484a",
     "torch_geometric.utils._to_dense_batch.to_dense_batch": "760fca67c82e3fee",
     "torch_geometric.utils.functions.cumsum": "c3b42cafaf31cfa3"
    }
   }
  ],
  "torch_geometric.nn.aggr.quantile.MedianAggregation": [
   {
    "verified_on": ["2.8.1", "2.9.0.dev20261027"],
    "functions": {
     "torch_geometric.nn.aggr.base.Aggregation.__call__": "c99b85959bf5c4c1",
     "torch_geometric.nn.aggr.base.Aggregation.assert_index_present": "0f156b5a843262dd",
     "torch_geometric.nn.aggr.base.Aggregation.assert_sorted_index": "146ecd3a9aea91a4",
     "torch_geometric.nn.aggr.base.Aggregation.assert_two_dimensional_input": "69ee2bfe5535ed73",
     "torch_geometric.nn.aggr.base.Aggregation.reduce": "684f925c6c0a126e",
     "torch_geometric.nn.aggr.base.Aggregation.to_dense_batch": "87311dc30eb55854",
     "torch_geometric.nn.aggr.base.expand_left": "df308bcb89c96ca2",
     "torch_geometric.nn.aggr.quantile.MedianAggregation.__init__": "8bf666ab2b573b5c",
     "torch_geometric.nn.aggr.quantile.QuantileAggregation.forward": "0538af2e634989d6",
     "torch_geometric.utils._scatter.broadcast": "01eaf980bf11f755",
     "torch_geometric.utils._scatter.scatter": "60a748ab45d2266f",
     "torch_geometric.utils._segment._torch_segment": "ca55b06f84d67aba",
     "torch_geometric.utils._segment.segment": "120b6d805e10484a",
     "torch_geometric.utils._to_dense_batch.to_dense_batch": "760fca67c82e3fee",
     "torch_geometric.utils.functions.cumsum": "c3b42cafaf31cfa3"
    }
   }
  ],
  "torch_geometric.nn.aggr.quantile.QuantileAggregation": [
   {
    "verified_on": ["2.8.1", "2.9.0.dev20261027"],
    "functions": {
     "torch_geometric.nn.aggr.base.Aggregation.__call__": "c99b85959bf5c4c1",
     "torch_geometric.nn.aggr.base.Aggregation.assert_index_present": "0f156b5a843262dd",
     "torch_geometric.nn.aggr.base.Aggregation.assert_sorted_index": "146ecd3a9aea91a4",
     "torch_geometric.nn.aggr.base.Aggregation.assert_two_dimensional_input": "69ee2bfe5535ed73",
     "torch_geometric.nn.aggr.base.Aggregation.reduce": "684f925c6c0a126e",
     "torch_geometric.nn.aggr.base.Aggregation.to_dense_batch": "87311dc30eb55854",
     "torch_geometric.nn.aggr.base.expand_left": "df308bcb89c96ca2",
     "torch_geometric.nn.aggr.quantile.QuantileAggregation.__init__": "b0750634db022994",
     "torch_geometric.nn.aggr.quantile.QuantileAggregation.forward": "0538af2e634989d6",
     "torch_geometric.utils._scatter.broadcast": "01eaf980bf11f755",
     "torch_geometric.utils._scatter.scatter": "60a748ab45d2266f",
     "torch_geometric.utils._segment._torch_segment": "ca55b06f84d67aba",
     "torch_geometric.utils._segment.segment": "120b6d805e10484a",
     "torch_geometric.utils._to_dense_batch.to_dense_batch": "760fca67c82e3fee",
     "torch_geometric.utils.functions.cumsum": "c3b42cafaf31cfa3"
    }
   }
  ],
  "torch_geometric.nn.aggr.scaler.DegreeScalerAggregation": [
   {
    "verified_on": ["2.8.1", "2.9.0.dev20261027"],
    "functions": {
     "torch_geometric.nn.aggr.base.Aggregation.__call__": "c99b85959bf5c4c1",
     "torch_geometric.nn.aggr.base.Aggregation.assert_index_present": "0f156b5a843262dd",
     "torch_geometric.nn.aggr.base.Aggregation.assert_sorted_index": "146ecd3a9aea91a4",
     "torch_geometric.nn.aggr.base.Aggregation.assert_two_dimensional_input": "69ee2bfe5535ed73",
     "torch_geometric.nn.aggr.base.Aggregation.reduce": "684f925c6c0a126e",
     "torch_geometric.nn.aggr.base.Aggregation.to_dense_batch": "87311dc30eb55854",
     "torch_geometric.nn.aggr.base.expand_left": "df308bcb89c96ca2",
     "torch_geometric.nn.aggr.scaler.DegreeScalerAggregation.__init__": "6891508363599378",
     "torch_geometric.nn.aggr.scaler.DegreeScalerAggregation.forward": "76c1379d0325a330",
     "torch_geometric.nn.resolver.aggregation_resolver": "cc0cbf56bb0e38da",
     "torch_geometric.utils._degree.degree": "1380da1dc1429c3f",
     "torch_geometric.utils._scatter.broadcast": "01eaf980bf11f755",
     "torch_geometric.utils._scatter.scatter": "60a748ab45d2266f",
     "torch_geometric.utils._segment._torch_segment": "ca55b06f84d67aba",
     "torch_geometric.utils._segment.segment": "120b6d805e10484a",
     "torch_geometric.utils._to_dense_batch.to_dense_batch": "760fca67c82e3fee",
     "torch_geometric.utils.functions.cumsum": "c3b42cafaf31cfa3",
     "torch_geometric.utils.num_nodes.maybe_num_nodes": "d818e742b4dd1dfc"
    }
   }
  ],
  "torch_geometric.nn.aggr.variance_preserving.VariancePreservingAggregation": [
   {
    "verified_on": ["2.8.1", "2.9.0.dev20261027"],
    "functions": {
     "torch_geometric.nn.aggr.base.Aggregation.__call__": "c99b85959bf5c4c1",
     "torch_geometric.nn.aggr.base.Aggregation.__init__": "65c18742c139d7f2",
     "torch_geometric.nn.aggr.base.Aggregation.assert_index_present": "0f156b5a843262dd",
     "torch_geometric.nn.aggr.base.Aggregation.assert_sorted_index": "146ecd3a9aea91a4",
     "torch_geometric.nn.aggr.base.Aggregation.assert_two_dimensional_input": "69ee2bfe5535ed73",
     "torch_geometric.nn.aggr.base.Aggregation.reduce": "684f925c6c0a126e",
     "torch_geometric.nn.aggr.base.Aggregation.to_dense_batch": "87311dc30eb55854",
     "torch_geometric.nn.aggr.base.expand_left": "df308bcb89c96ca2",
     "torch_geometric.nn.aggr.variance_preserving.VariancePreservingAggregation.forward": "26bed93b9299ddba",
     "torch_geometric.utils._degree.degree": "1380da1dc1429c3f",
     "torch_geometric.utils._scatter.broadcast": "01eaf980bf11f755",
     "torch_geometric.utils._scatter.scatter": "60a748ab45d2266f",
     "torch_geometric.utils._segment._torch_segment": "ca55b06f84d67aba",
     "torch_geometric.utils._segment.segment": "120b6d805e10484a",
     "torch_geometric.utils._to_dense_batch.to_dense_batch": "760fca67c82e3fee",
     "torch_geometric.utils.functions.cumsum": "c3b42cafaf31cfa3",
     "torch_geometric.utils.num_nodes.maybe_num_nodes": "d818e742b4dd1dfc"
    }
   }
  ],
  "torch_geometric.nn.attention.performer.PerformerAttention": [
   {
    "verified_on": ["2.8.1", "2.9.0.dev20261027"],
    "functions": {
     "torch_geometric.nn.attention.performer.PerformerAttention.__init__": "3e41de47a0266527",
     "torch_geometric.nn.attention.performer.PerformerAttention.forward": "87c4b73cfc7a2597",
     "torch_geometric.nn.attention.performer.PerformerAttention.redraw_projection_matrix": "22281a03d2a13564",
     "torch_geometric.nn.attention.performer._orthogonal_matrix": "38da7a218594386a",
     "torch_geometric.nn.attention.performer.orthogonal_matrix": "057f99847a553ed7"
    }
   }
  ],
  "torch_geometric.nn.attention.performer.PerformerProjection": [
   {
    "verified_on": ["2.8.1", "2.9.0.dev20261027"],
    "functions": {
     "torch_geometric.nn.attention.performer.PerformerProjection.__init__": "2439c7d20e758274",
     "torch_geometric.nn.attention.performer.PerformerProjection.forward": "3559e3cba8620f7e",
     "torch_geometric.nn.attention.performer._orthogonal_matrix": "38da7a218594386a",
     "torch_geometric.nn.attention.performer.generalized_kernel": "e3e0d24f356303c2",
     "torch_geometric.nn.attention.performer.linear_attention": "b0a1897eee9cea2a",
     "torch_geometric.nn.attention.performer.orthogonal_matrix": "057f99847a553ed7"
    }
   }
  ],
  "torch_geometric.nn.attention.polynormer.PolynormerAttention": [
   {
    "verified_on": ["2.8.1", "2.9.0.dev20261027"],
    "functions": {
     "torch_geometric.nn.attention.polynormer.PolynormerAttention.__init__": "6be442f0a535288b",
     "torch_geometric.nn.attention.polynormer.PolynormerAttention.forward": "e1d5ca7e6b69a177"
    }
   }
  ],
  "torch_geometric.nn.attention.sgformer.SGFormerAttention": [
   {
    "verified_on": ["2.8.1", "2.9.0.dev20261027"],
    "functions": {
     "torch_geometric.nn.attention.sgformer.SGFormerAttention.__init__": "05f4b2e7a4180b67",
     "torch_geometric.nn.attention.sgformer.SGFormerAttention.forward": "808c147f255552db"
    }
   }
  ],
  "torch_geometric.nn.conv.agnn_conv.AGNNConv": [
   {
    "verified_on": ["2.8.1", "2.9.0.dev20261027"],
    "functions": {
     "torch_geometric.nn.conv.agnn_conv.AGNNConv.__init__": "44f4560ecf6c5a13",
     "torch_geometric.nn.conv.agnn_conv.AGNNConv.forward": "1613d62d396383e7",
     "torch_geometric.nn.conv.agnn_conv.AGNNConv.message": "08739217c832814a",
     "torch_geometric.nn.conv.message_passing.MessagePassing.aggregate": "7708b8806a341fdc",
     "torch_geometric.nn.conv.message_passing.MessagePassing.edge_update": "b2b99c7f3e2565fc",
     "torch_geometric.nn.conv.message_passing.MessagePassing.message_and_aggregate": "59c894d27118e2f9",
     "torch_geometric.nn.conv.message_passing.MessagePassing.update": "c66298aa4b50c783",
     "torch_geometric.utils._coalesce.coalesce": "bc3017c8c6ccb212",
     "torch_geometric.utils._index_sort.index_sort": "b5e2c6af93ac5277",
     "torch_geometric.utils._scatter.broadcast": "01eaf980bf11f755",
     "torch_geometric.utils._scatter.scatter": "60a748ab45d2266f",
     "torch_geometric.utils._segment._torch_segment": "ca55b06f84d67aba",
     "torch_geometric.utils._segment.segment": "120b6d805e10484a",
     "torch_geometric.utils._softmax.softmax": "526253f0458ea923",
     "torch_geometric.utils.loop.add_self_loops": "8bc3453900972f1c",
     "torch_geometric.utils.loop.compute_loop_attr": "1b2c7f27947d5ad5",
     "torch_geometric.utils.loop.remove_self_loops": "04f79d4d2c48f838",
     "torch_geometric.utils.num_nodes.maybe_num_nodes": "d818e742b4dd1dfc",
     "torch_geometric.utils.sparse.is_torch_sparse_tensor": "2717b5440caaba35",
     "torch_geometric.utils.sparse.to_edge_index": "1191198c16e75ad5",
     "torch_geometric.utils.sparse.to_torch_coo_tensor": "55337f53371be592",
     "torch_geometric.utils.sparse.to_torch_csr_tensor": "d997ed08926c9f7c",
     "torch_geometric.nn.conv.message_passing.MessagePassing.propagate:signature": "15a4a96beceb73da"
    }
   }
  ],
  "torch_geometric.nn.conv.antisymmetric_conv.AntiSymmetricConv": [
   {
    "verified_on": ["2.8.1", "2.9.0.dev20261027"],
    "functions": {
     "torch_geometric.nn.conv.antisymmetric_conv.AntiSymmetricConv.__init__": "b32c31fdcc643ad0",
     "torch_geometric.nn.conv.antisymmetric_conv.AntiSymmetricConv.forward": "fcbc65a7136d190b",
     "torch_geometric.nn.resolver.activation_resolver": "6728949bc37d9a15",
     "torch_geometric.nn.resolver.swish": "6dbf6fa02c64b65a"
    }
   }
  ],
  "torch_geometric.nn.conv.appnp.APPNP": [
   {
    "verified_on": ["2.8.1", "2.9.0.dev20261027"],
    "functions": {
     "torch_geometric.nn.conv.appnp.APPNP.__init__": "d0b78fe78991a8e3",
     "torch_geometric.nn.conv.appnp.APPNP.forward": "e2d4fcc4bdc15187",
     "torch_geometric.nn.conv.appnp.APPNP.message": "4861282efe375942",
     "torch_geometric.nn.conv.appnp.APPNP.message_and_aggregate": "e4763290e17edaff",
     "torch_geometric.nn.conv.gcn_conv.gcn_norm": "d9fc7784c8a02f57",
     "torch_geometric.nn.conv.message_passing.MessagePassing.aggregate": "7708b8806a341fdc",
     "torch_geometric.nn.conv.message_passing.MessagePassing.edge_update": "b2b99c7f3e2565fc",
     "torch_geometric.nn.conv.message_passing.MessagePassing.update": "c66298aa4b50c783",
     "torch_geometric.utils._coalesce.coalesce": "bc3017c8c6ccb212",
     "torch_geometric.utils._index_sort.index_sort": "b5e2c6af93ac5277",
     "torch_geometric.utils._scatter.broadcast": "01eaf980bf11f755",
     "torch_geometric.utils._scatter.scatter": "60a748ab45d2266f",
     "torch_geometric.utils._spmm.spmm": "22de66762dc974cb",
     "torch_geometric.utils.loop.add_remaining_self_loops": "7fc0ae8d3d6f3f5a",
     "torch_geometric.utils.loop.add_self_loops": "8bc3453900972f1c",
     "torch_geometric.utils.loop.compute_loop_attr": "1b2c7f27947d5ad5",
     "torch_geometric.utils.num_nodes.maybe_num_nodes": "d818e742b4dd1dfc",
     "torch_geometric.utils.sparse.is_torch_sparse_tensor": "2717b5440caaba35",
     "torch_geometric.utils.sparse.set_sparse_value": "3e50e2bfbc3404b4",
     "torch_geometric.utils.sparse.to_edge_index": "1191198c16e75ad5",
     "torch_geometric.utils.sparse.to_torch_coo_tensor": "55337f53371be592",
     "torch_geometric.utils.sparse.to_torch_csr_tensor": "d997ed08926c9f7c",
     "torch_geometric.nn.conv.message_passing.MessagePassing.propagate:signature": "15a4a96beceb73da"
    }
   }
  ],
  "torch_geometric.nn.conv.arma_conv.ARMAConv": [
   {
    "verified_on": ["2.8.1", "2.9.0.dev20261027"],
    "functions": {
     "torch_geometric.nn.conv.arma_conv.ARMAConv.__init__": "328b47de3d6e7b88",
     "torch_geometric.nn.conv.arma_conv.ARMAConv.forward": "cd36ac240f1d575e",
     "torch_geometric.nn.conv.arma_conv.ARMAConv.initialize_parameters": "6ec5158b9ad5d9a9",
     "torch_geometric.nn.conv.arma_conv.ARMAConv.message": "5566cd24926de9fd",
     "torch_geometric.nn.conv.arma_conv.ARMAConv.message_and_aggregate": "e4763290e17edaff",
     "torch_geometric.nn.conv.gcn_conv.gcn_norm": "d9fc7784c8a02f57",
     "torch_geometric.nn.conv.message_passing.MessagePassing.aggregate": "7708b8806a341fdc",
     "torch_geometric.nn.conv.message_passing.MessagePassing.edge_update": "b2b99c7f3e2565fc",
     "torch_geometric.nn.conv.message_passing.MessagePassing.update": "c66298aa4b50c783",
     "torch_geometric.nn.inits.glorot": "1f63aaa744efdb5a",
     "torch_geometric.utils._coalesce.coalesce": "bc3017c8c6ccb212",
     "torch_geometric.utils._index_sort.index_sort": "b5e2c6af93ac5277",
     "torch_geometric.utils._scatter.broadcast": "01eaf980bf11f755",
     "torch_geometric.utils._scatter.scatter": "60a748ab45d2266f",
     "torch_geometric.utils._spmm.spmm": "22de66762dc974cb",
     "torch_geometric.utils.loop.add_remaining_self_loops": "7fc0ae8d3d6f3f5a",
     "torch_geometric.utils.loop.add_self_loops": "8bc3453900972f1c",
     "torch_geometric.utils.loop.compute_loop_attr": "1b2c7f27947d5ad5",
     "torch_geometric.utils.num_nodes.maybe_num_nodes": "d818e742b4dd1dfc",
     "torch_geometric.utils.sparse.is_torch_sparse_tensor": "2717b5440caaba35",
     "torch_geometric.utils.sparse.set_sparse_value": "3e50e2bfbc3404b4",
     "torch_geometric.utils.sparse.to_edge_index": "1191198c16e75ad5",
     "torch_geometric.utils.sparse.to_torch_coo_tensor": "55337f53371be592",
     "torch_geometric.utils.sparse.to_torch_csr_tensor": "d997ed08926c9f7c",
     "torch_geometric.nn.conv.message_passing.MessagePassing.propagate:signature": "15a4a96beceb73da"
    }
   }
  ],
  "torch_geometric.nn.conv.cg_conv.CGConv": [
   {
    "verified_on": ["2.8.1", "2.9.0.dev20261027"],
    "functions": {
     "torch_geometric.nn.conv.cg_conv.CGConv.__init__": "ad246cbe8683f3fe",
     "torch_geometric.nn.conv.cg_conv.CGConv.forward": "f098ca63b7813a58",
     "torch_geometric.nn.conv.cg_conv.CGConv.message": "83cafa1b319fc6a2",
     "torch_geometric.nn.conv.message_passing.MessagePassing.aggregate": "7708b8806a341fdc",
     "torch_geometric.nn.conv.message_passing.MessagePassing.edge_update": "b2b99c7f3e2565fc",
     "torch_geometric.nn.conv.message_passing.MessagePassing.message_and_aggregate": "59c894d27118e2f9",
     "torch_geometric.nn.conv.message_passing.MessagePassing.update": "c66298aa4b50c783",
     "torch_geometric.nn.conv.message_passing.MessagePassing.propagate:signature": "15a4a96beceb73da"
    }
   }
  ],
  "torch_geometric.nn.conv.cheb_conv.ChebConv": [
   {
    "verified_on": ["2.8.1", "2.9.0.dev20261027"],
    "functions": {
     "torch_geometric.nn.conv.cheb_conv.ChebConv.__init__": "bd222e98daa0270d",
     "torch_geometric.nn.conv.cheb_conv.ChebConv.__norm__": "7850b695b684a0cc",
     "torch_geometric.nn.conv.cheb_conv.ChebConv.forward": "97f1ef9e8e150c1d",
     "torch_geometric.nn.conv.cheb_conv.ChebConv.message": "f12f3d8da3528f80",
     "torch_geometric.nn.conv.message_passing.MessagePassing.aggregate": "7708b8806a341fdc",
     "torch_geometric.nn.conv.message_passing.MessagePassing.edge_update": "b2b99c7f3e2565fc",
     "torch_geometric.nn.conv.message_passing.MessagePassing.message_and_aggregate": "59c894d27118e2f9",
     "torch_geometric.nn.conv.message_passing.MessagePassing.update": "c66298aa4b50c783",
     "torch_geometric.utils._coalesce.coalesce": "bc3017c8c6ccb212",
     "torch_geometric.utils._index_sort.index_sort": "b5e2c6af93ac5277",
     "torch_geometric.utils._scatter.broadcast": "01eaf980bf11f755",
     "torch_geometric.utils._scatter.scatter": "60a748ab45d2266f",
     "torch_geometric.utils.laplacian.get_laplacian": "a6fb04550202f9c6",
     "torch_geometric.utils.loop.add_self_loops": "8bc3453900972f1c",
     "torch_geometric.utils.loop.compute_loop_attr": "1b2c7f27947d5ad5",
     "torch_geometric.utils.loop.remove_self_loops": "04f79d4d2c48f838",
     "torch_geometric.utils.num_nodes.maybe_num_nodes": "d818e742b4dd1dfc",
     "torch_geometric.utils.sparse.is_torch_sparse_tensor": "2717b5440caaba35",
     "torch_geometric.utils.sparse.to_edge_index": "1191198c16e75ad5",
     "torch_geometric.utils.sparse.to_torch_coo_tensor": "55337f53371be592",
     "torch_geometric.utils.sparse.to_torch_csr_tensor": "d997ed08926c9f7c",
     "torch_geometric.nn.conv.message_passing.MessagePassing.propagate:signature": "15a4a96beceb73da"
    }
   }
  ],
  "torch_geometric.nn.conv.cluster_gcn_conv.ClusterGCNConv": [
   {
    "verified_on": ["2.8.1", "2.9.0.dev20261027"],
    "functions": {
     "torch_geometric.nn.conv.cluster_gcn_conv.ClusterGCNConv.__init__": "9f69693628e6c994",
     "torch_geometric.nn.conv.cluster_gcn_conv.ClusterGCNConv.forward": "eb3bf0ad2bc21b71",
     "torch_geometric.nn.conv.cluster_gcn_conv.ClusterGCNConv.message": "5566cd24926de9fd",
     "torch_geometric.nn.conv.cluster_gcn_conv.ClusterGCNConv.message_and_aggregate": "e4763290e17edaff",
     "torch_geometric.nn.conv.message_passing.MessagePassing.aggregate": "7708b8806a341fdc",
     "torch_geometric.nn.conv.message_passing.MessagePassing.edge_update": "b2b99c7f3e2565fc",
     "torch_geometric.nn.conv.message_passing.MessagePassing.update": "c66298aa4b50c783",
     "torch_geometric.utils._coalesce.coalesce": "bc3017c8c6ccb212",
     "torch_geometric.utils._degree.degree": "1380da1dc1429c3f",
     "torch_geometric.utils._index_sort.index_sort": "b5e2c6af93ac5277",
     "torch_geometric.utils._scatter.broadcast": "01eaf980bf11f755",
     "torch_geometric.utils._scatter.scatter": "60a748ab45d2266f",
     "torch_geometric.utils._spmm.spmm": "22de66762dc974cb",
     "torch_geometric.utils.loop.add_self_loops": "8bc3453900972f1c",
     "torch_geometric.utils.loop.compute_loop_attr": "1b2c7f27947d5ad5",
     "torch_geometric.utils.loop.remove_self_loops": "04f79d4d2c48f838",
     "torch_geometric.utils.num_nodes.maybe_num_nodes": "d818e742b4dd1dfc",
     "torch_geometric.utils.sparse.is_torch_sparse_tensor": "2717b5440caaba35",
     "torch_geometric.utils.sparse.set_sparse_value": "3e50e2bfbc3404b4",
     "torch_geometric.utils.sparse.to_edge_index": "1191198c16e75ad5",
     "torch_geometric.utils.sparse.to_torch_coo_tensor": "55337f53371be592",
     "torch_geometric.utils.sparse.to_torch_csr_tensor": "d997ed08926c9f7c",
     "torch_geometric.nn.conv.message_passing.MessagePassing.propagate:signature": "15a4a96beceb73da"
    }
   }
  ],
  "torch_geometric.nn.conv.dir_gnn_conv.DirGNNConv": [
   {
    "verified_on": ["2.8.1", "2.9.0.dev20261027"],
    "functions": {
     "torch_geometric.nn.conv.dir_gnn_conv.DirGNNConv.__init__": "0a02f66011441aa9",
     "torch_geometric.nn.conv.dir_gnn_conv.DirGNNConv.forward": "dc1ed627523d8a51"
    }
   }
  ],
  "torch_geometric.nn.conv.dna_conv.DNAConv": [
   {
    "verified_on": ["2.8.1", "2.9.0.dev20261027"],
    "functions": {
     "torch_geometric.nn.conv.dna_conv.DNAConv.__init__": "dfed4ae381190779",
     "torch_geometric.nn.conv.dna_conv.DNAConv.forward": "39684b6ab9f6d286",
     "torch_geometric.nn.conv.dna_conv.DNAConv.message": "f0b576d2dc281d08",
     "torch_geometric.nn.conv.gcn_conv.gcn_norm": "d9fc7784c8a02f57",
     "torch_geometric.nn.conv.message_passing.MessagePassing.aggregate": "7708b8806a341fdc",
     "torch_geometric.nn.conv.message_passing.MessagePassing.edge_update": "b2b99c7f3e2565fc",
     "torch_geometric.nn.conv.message_passing.MessagePassing.message_and_aggregate": "59c894d27118e2f9",
     "torch_geometric.nn.conv.message_passing.MessagePassing.update": "c66298aa4b50c783",
     "torch_geometric.utils._coalesce.coalesce": "bc3017c8c6ccb212",
     "torch_geometric.utils._index_sort.index_sort": "b5e2c6af93ac5277",
     "torch_geometric.utils._scatter.broadcast": "01eaf980bf11f755",
     "torch_geometric.utils._scatter.scatter": "60a748ab45d2266f",
     "torch_geometric.utils.loop.add_remaining_self_loops": "7fc0ae8d3d6f3f5a",
     "torch_geometric.utils.loop.add_self_loops": "8bc3453900972f1c",
     "torch_geometric.utils.loop.compute_loop_attr": "1b2c7f27947d5ad5",
     "torch_geometric.utils.num_nodes.maybe_num_nodes": "d818e742b4dd1dfc",
     "torch_geometric.utils.sparse.is_torch_sparse_tensor": "2717b5440caaba35",
     "torch_geometric.utils.sparse.set_sparse_value": "3e50e2bfbc3404b4",
     "torch_geometric.utils.sparse.to_edge_index": "1191198c16e75ad5",
     "torch_geometric.utils.sparse.to_torch_coo_tensor": "55337f53371be592",
     "torch_geometric.utils.sparse.to_torch_csr_tensor": "d997ed08926c9f7c",
     "torch_geometric.nn.conv.message_passing.MessagePassing.propagate:signature": "15a4a96beceb73da"
    }
   }
  ],
  "torch_geometric.nn.conv.dna_conv.Linear": [
   {
    "verified_on": ["2.8.1", "2.9.0.dev20261027"],
    "functions": {
     "torch_geometric.nn.conv.dna_conv.Linear.__init__": "f7f3ac2d19fa70f5",
     "torch_geometric.nn.conv.dna_conv.Linear.forward": "830deb6a16cdd92f"
    }
   }
  ],
  "torch_geometric.nn.conv.dna_conv.MultiHead": [
   {
    "verified_on": ["2.8.1", "2.9.0.dev20261027"],
    "functions": {
     "torch_geometric.nn.conv.dna_conv.Attention.compute_attention": "8d91b6e34341323d",
     "torch_geometric.nn.conv.dna_conv.MultiHead.__init__": "c72bc5a472ae7e34",
     "torch_geometric.nn.conv.dna_conv.MultiHead.forward": "f7c1c140b90115bd",
     "torch_geometric.nn.conv.dna_conv.restricted_softmax": "61dbd5493ac349ba"
    }
   }
  ],
  "torch_geometric.nn.conv.edge_conv.EdgeConv": [
   {
    "verified_on": ["2.8.1", "2.9.0.dev20261027"],
    "functions": {
     "torch_geometric.nn.conv.edge_conv.EdgeConv.__init__": "f55bf5fdd899993c",
     "torch_geometric.nn.conv.edge_conv.EdgeConv.forward": "d56d2715b722f41e",
     "torch_geometric.nn.conv.edge_conv.EdgeConv.message": "83e0ed23be21f4db",
     "torch_geometric.nn.conv.message_passing.MessagePassing.aggregate": "7708b8806a341fdc",
     "torch_geometric.nn.conv.message_passing.MessagePassing.edge_update": "b2b99c7f3e2565fc",
     "torch_geometric.nn.conv.message_passing.MessagePassing.message_and_aggregate": "59c894d27118e2f9",
     "torch_geometric.nn.conv.message_passing.MessagePassing.update": "c66298aa4b50c783",
     "torch_geometric.nn.conv.message_passing.MessagePassing.propagate:signature": "15a4a96beceb73da"
    }
   }
  ],
  "torch_geometric.nn.conv.eg_conv.EGConv": [
   {
    "verified_on": ["2.8.1", "2.9.0.dev20261027"],
    "functions": {
     "torch_geometric.nn.conv.eg_conv.EGConv.__init__": "cf52630e3e786ffd",
     "torch_geometric.nn.conv.eg_conv.EGConv.aggregate": "d2838d7ff9473147",
     "torch_geometric.nn.conv.eg_conv.EGConv.forward": "2a4a32b272c1ba20",
     "torch_geometric.nn.conv.eg_conv.EGConv.message": "e7d255c30d0baccf",
     "torch_geometric.nn.conv.eg_conv.EGConv.message_and_aggregate": "e72a56658e479c12",
     "torch_geometric.nn.conv.gcn_conv.gcn_norm": "d9fc7784c8a02f57",
     "torch_geometric.nn.conv.message_passing.MessagePassing.edge_update": "b2b99c7f3e2565fc",
     "torch_geometric.nn.conv.message_passing.MessagePassing.update": "c66298aa4b50c783",
     "torch_geometric.utils._coalesce.coalesce": "bc3017c8c6ccb212",
     "torch_geometric.utils._index_sort.index_sort": "b5e2c6af93ac5277",
     "torch_geometric.utils._scatter.broadcast": "01eaf980bf11f755",
     "torch_geometric.utils._scatter.scatter": "60a748ab45d2266f",
     "torch_geometric.utils._spmm.spmm": "22de66762dc974cb",
     "torch_geometric.utils.loop.add_remaining_self_loops": "7fc0ae8d3d6f3f5a",
     "torch_geometric.utils.loop.add_self_loops": "8bc3453900972f1c",
     "torch_geometric.utils.loop.compute_loop_attr": "1b2c7f27947d5ad5",
     "torch_geometric.utils.num_nodes.maybe_num_nodes": "d818e742b4dd1dfc",
     "torch_geometric.utils.sparse.is_torch_sparse_tensor": "2717b5440caaba35",
     "torch_geometric.utils.sparse.set_sparse_value": "3e50e2bfbc3404b4",
     "torch_geometric.utils.sparse.to_edge_index": "1191198c16e75ad5",
     "torch_geometric.utils.sparse.to_torch_coo_tensor": "55337f53371be592",
     "torch_geometric.utils.sparse.to_torch_csr_tensor": "d997ed08926c9f7c",
     "torch_geometric.nn.conv.message_passing.MessagePassing.propagate:signature": "15a4a96beceb73da"
    }
   }
  ],
  "torch_geometric.nn.conv.fa_conv.FAConv": [
   {
    "verified_on": ["2.8.1", "2.9.0.dev20261027"],
    "functions": {
     "torch_geometric.nn.conv.fa_conv.FAConv.__init__": "4166f2362902492b",
     "torch_geometric.nn.conv.fa_conv.FAConv.forward": "08466db5aa7df8d6",
     "torch_geometric.nn.conv.fa_conv.FAConv.message": "433caaade245a300",
     "torch_geometric.nn.conv.gcn_conv.gcn_norm": "d9fc7784c8a02f57",
     "torch_geometric.nn.conv.message_passing.MessagePassing.aggregate": "7708b8806a341fdc",
     "torch_geometric.nn.conv.message_passing.MessagePassing.edge_update": "b2b99c7f3e2565fc",
     "torch_geometric.nn.conv.message_passing.MessagePassing.message_and_aggregate": "59c894d27118e2f9",
     "torch_geometric.nn.conv.message_passing.MessagePassing.update": "c66298aa4b50c783",
     "torch_geometric.utils._coalesce.coalesce": "bc3017c8c6ccb212",
     "torch_geometric.utils._index_sort.index_sort": "b5e2c6af93ac5277",
     "torch_geometric.utils._scatter.broadcast": "01eaf980bf11f755",
     "torch_geometric.utils._scatter.scatter": "60a748ab45d2266f",
     "torch_geometric.utils.loop.add_remaining_self_loops": "7fc0ae8d3d6f3f5a",
     "torch_geometric.utils.loop.add_self_loops": "8bc3453900972f1c",
     "torch_geometric.utils.loop.compute_loop_attr": "1b2c7f27947d5ad5",
     "torch_geometric.utils.num_nodes.maybe_num_nodes": "d818e742b4dd1dfc",
     "torch_geometric.utils.sparse.is_torch_sparse_tensor": "2717b5440caaba35",
     "torch_geometric.utils.sparse.set_sparse_value": "3e50e2bfbc3404b4",
     "torch_geometric.utils.sparse.to_edge_index": "1191198c16e75ad5",
     "torch_geometric.utils.sparse.to_torch_coo_tensor": "55337f53371be592",
     "torch_geometric.utils.sparse.to_torch_csr_tensor": "d997ed08926c9f7c",
     "torch_geometric.nn.conv.message_passing.MessagePassing.propagate:signature": "15a4a96beceb73da"
    }
   }
  ],
  "torch_geometric.nn.conv.feast_conv.FeaStConv": [
   {
    "verified_on": ["2.8.1", "2.9.0.dev20261027"],
    "functions": {
     "torch_geometric.nn.conv.feast_conv.FeaStConv.__init__": "d0fddd77a5c9f588",
     "torch_geometric.nn.conv.feast_conv.FeaStConv.forward": "d905f9acf2cf3157",
     "torch_geometric.nn.conv.feast_conv.FeaStConv.message": "9814198a2ffe0cd6",
     "torch_geometric.nn.conv.message_passing.MessagePassing.aggregate": "7708b8806a341fdc",
     "torch_geometric.nn.conv.message_passing.MessagePassing.edge_update": "b2b99c7f3e2565fc",
     "torch_geometric.nn.conv.message_passing.MessagePassing.message_and_aggregate": "59c894d27118e2f9",
     "torch_geometric.nn.conv.message_passing.MessagePassing.update": "c66298aa4b50c783",
     "torch_geometric.utils._coalesce.coalesce": "bc3017c8c6ccb212",
     "torch_geometric.utils._index_sort.index_sort": "b5e2c6af93ac5277",
     "torch_geometric.utils._scatter.broadcast": "01eaf980bf11f755",
     "torch_geometric.utils._scatter.scatter": "60a748ab45d2266f",
     "torch_geometric.utils.loop.add_self_loops": "8bc3453900972f1c",
     "torch_geometric.utils.loop.compute_loop_attr": "1b2c7f27947d5ad5",
     "torch_geometric.utils.loop.remove_self_loops": "04f79d4d2c48f838",
     "torch_geometric.utils.num_nodes.maybe_num_nodes": "d818e742b4dd1dfc",
     "torch_geometric.utils.sparse.is_torch_sparse_tensor": "2717b5440caaba35",
     "torch_geometric.utils.sparse.to_edge_index": "1191198c16e75ad5",
     "torch_geometric.utils.sparse.to_torch_coo_tensor": "55337f53371be592",
     "torch_geometric.utils.sparse.to_torch_csr_tensor": "d997ed08926c9f7c",
     "torch_geometric.nn.conv.message_passing.MessagePassing.propagate:signature": "15a4a96beceb73da"
    }
   }
  ],
  "torch_geometric.nn.conv.film_conv.FiLMConv": [
   {
    "verified_on": ["2.8.1", "2.9.0.dev20261027"],
    "functions": {
     "torch_geometric.nn.conv.film_conv.FiLMConv.__init__": "a60dabbbda143722",
     "torch_geometric.nn.conv.film_conv.FiLMConv.forward": "00b2ef1283f77262",
     "torch_geometric.nn.conv.film_conv.FiLMConv.message": "c066956440d23e3a",
     "torch_geometric.nn.conv.message_passing.MessagePassing.aggregate": "7708b8806a341fdc",
     "torch_geometric.nn.conv.message_passing.MessagePassing.edge_update": "b2b99c7f3e2565fc",
     "torch_geometric.nn.conv.message_passing.MessagePassing.message_and_aggregate": "59c894d27118e2f9",
     "torch_geometric.nn.conv.message_passing.MessagePassing.update": "c66298aa4b50c783",
     "torch_geometric.nn.conv.message_passing.MessagePassing.propagate:signature": "15a4a96beceb73da"
    }
   }
  ],
  "torch_geometric.nn.conv.gat_conv.GATConv": [
   {
    "verified_on": ["2.8.1", "2.9.0.dev20261027"],
    "functions": {
     "torch_geometric.nn.conv.gat_conv.GATConv.__init__": "05ef08bbdc9e02be",
     "torch_geometric.nn.conv.gat_conv.GATConv.edge_update": "0c5ea1249518e4fb",
     "torch_geometric.nn.conv.gat_conv.GATConv.forward": "f48fbef93fa111ac",
     "torch_geometric.nn.conv.gat_conv.GATConv.message": "60797f7217ff6b28",
     "torch_geometric.nn.conv.message_passing.MessagePassing.aggregate": "7708b8806a341fdc",
     "torch_geometric.nn.conv.message_passing.MessagePassing.message_and_aggregate": "59c894d27118e2f9",
     "torch_geometric.nn.conv.message_passing.MessagePassing.update": "c66298aa4b50c783",
     "torch_geometric.utils._coalesce.coalesce": "bc3017c8c6ccb212",
     "torch_geometric.utils._index_sort.index_sort": "b5e2c6af93ac5277",
     "torch_geometric.utils._scatter.broadcast": "01eaf980bf11f755",
     "torch_geometric.utils._scatter.scatter": "60a748ab45d2266f",
     "torch_geometric.utils._segment._torch_segment": "ca55b06f84d67aba",
     "torch_geometric.utils._segment.segment": "120b6d805e10484a",
     "torch_geometric.utils._softmax.softmax": "526253f0458ea923",
     "torch_geometric.utils.loop.add_self_loops": "8bc3453900972f1c",
     "torch_geometric.utils.loop.compute_loop_attr": "1b2c7f27947d5ad5",
     "torch_geometric.utils.loop.remove_self_loops": "04f79d4d2c48f838",
     "torch_geometric.utils.num_nodes.maybe_num_nodes": "d818e742b4dd1dfc",
     "torch_geometric.utils.sparse.is_torch_sparse_tensor": "2717b5440caaba35",
     "torch_geometric.utils.sparse.set_sparse_value": "3e50e2bfbc3404b4",
     "torch_geometric.utils.sparse.to_edge_index": "1191198c16e75ad5",
     "torch_geometric.utils.sparse.to_torch_coo_tensor": "55337f53371be592",
     "torch_geometric.utils.sparse.to_torch_csr_tensor": "d997ed08926c9f7c",
     "torch_geometric.nn.conv.message_passing.MessagePassing.propagate:signature": "15a4a96beceb73da"
    }
   }
  ],
  "torch_geometric.nn.conv.gated_graph_conv.GatedGraphConv": [
   {
    "verified_on": ["2.8.1", "2.9.0.dev20261027"],
    "functions": {
     "torch_geometric.nn.conv.gated_graph_conv.GatedGraphConv.__init__": "8d681184d92e3af1",
     "torch_geometric.nn.conv.gated_graph_conv.GatedGraphConv.forward": "8733f08824f8d1dc",
     "torch_geometric.nn.conv.gated_graph_conv.GatedGraphConv.message": "bbac38d740c9de89",
     "torch_geometric.nn.conv.gated_graph_conv.GatedGraphConv.message_and_aggregate": "e4763290e17edaff",
     "torch_geometric.nn.conv.message_passing.MessagePassing.aggregate": "7708b8806a341fdc",
     "torch_geometric.nn.conv.message_passing.MessagePassing.edge_update": "b2b99c7f3e2565fc",
     "torch_geometric.nn.conv.message_passing.MessagePassing.update": "c66298aa4b50c783",
     "torch_geometric.utils._scatter.broadcast": "01eaf980bf11f755",
     "torch_geometric.utils._scatter.scatter": "60a748ab45d2266f",
     "torch_geometric.utils._spmm.spmm": "22de66762dc974cb",
     "torch_geometric.utils.sparse.is_torch_sparse_tensor": "2717b5440caaba35",
     "torch_geometric.nn.conv.message_passing.MessagePassing.propagate:signature": "15a4a96beceb73da"
    }
   }
  ],
  "torch_geometric.nn.conv.gatv2_conv.GATv2Conv": [
   {
    "verified_on": ["2.8.1", "2.9.0.dev20261027"],
    "functions": {
     "torch_geometric.nn.conv.gatv2_conv.GATv2Conv.__init__": "c48acb0c172dba7d",
     "torch_geometric.nn.conv.gatv2_conv.GATv2Conv.edge_update": "4bb79cf2a0d1635e",
     "torch_geometric.nn.conv.gatv2_conv.GATv2Conv.forward": "c6aed411fa4399e3",
     "torch_geometric.nn.conv.gatv2_conv.GATv2Conv.message": "59265c10531bb395",
     "torch_geometric.nn.conv.message_passing.MessagePassing.aggregate": "7708b8806a341fdc",
     "torch_geometric.nn.conv.message_passing.MessagePassing.message_and_aggregate": "59c894d27118e2f9",
     "torch_geometric.nn.conv.message_passing.MessagePassing.update": "c66298aa4b50c783",
     "torch_geometric.utils._coalesce.coalesce": "bc3017c8c6ccb212",
     "torch_geometric.utils._index_sort.index_sort": "b5e2c6af93ac5277",
     "torch_geometric.utils._scatter.broadcast": "01eaf980bf11f755",
     "torch_geometric.utils._scatter.scatter": "60a748ab45d2266f",
     "torch_geometric.utils._segment._torch_segment": "ca55b06f84d67aba",
     "torch_geometric.utils._segment.segment": "120b6d805e10484a",
     "torch_geometric.utils._softmax.softmax": "526253f0458ea923",
     "torch_geometric.utils.loop.add_self_loops": "8bc3453900972f1c",
     "torch_geometric.utils.loop.compute_loop_attr": "1b2c7f27947d5ad5",
     "torch_geometric.utils.loop.remove_self_loops": "04f79d4d2c48f838",
     "torch_geometric.utils.num_nodes.maybe_num_nodes": "d818e742b4dd1dfc",
     "torch_geometric.utils.sparse.is_torch_sparse_tensor": "2717b5440caaba35",
     "torch_geometric.utils.sparse.set_sparse_value": "3e50e2bfbc3404b4",
     "torch_geometric.utils.sparse.to_edge_index": "1191198c16e75ad5",
     "torch_geometric.utils.sparse.to_torch_coo_tensor": "55337f53371be592",
     "torch_geometric.utils.sparse.to_torch_csr_tensor": "d997ed08926c9f7c",
     "torch_geometric.nn.conv.message_passing.MessagePassing.propagate:signature": "15a4a96beceb73da"
    }
   }
  ],
  "torch_geometric.nn.conv.gcn2_conv.GCN2Conv": [
   {
    "verified_on": ["2.8.1", "2.9.0.dev20261027"],
    "functions": {
     "torch_geometric.nn.conv.gcn2_conv.GCN2Conv.__init__": "ea4368135e7adb3e",
     "torch_geometric.nn.conv.gcn2_conv.GCN2Conv.forward": "e7a109c427acf3dd",
     "torch_geometric.nn.conv.gcn2_conv.GCN2Conv.message": "4861282efe375942",
     "torch_geometric.nn.conv.gcn2_conv.GCN2Conv.message_and_aggregate": "e4763290e17edaff",
     "torch_geometric.nn.conv.gcn_conv.gcn_norm": "d9fc7784c8a02f57",
     "torch_geometric.nn.conv.message_passing.MessagePassing.aggregate": "7708b8806a341fdc",
     "torch_geometric.nn.conv.message_passing.MessagePassing.edge_update": "b2b99c7f3e2565fc",
     "torch_geometric.nn.conv.message_passing.MessagePassing.update": "c66298aa4b50c783",
     "torch_geometric.utils._coalesce.coalesce": "bc3017c8c6ccb212",
     "torch_geometric.utils._index_sort.index_sort": "b5e2c6af93ac5277",
     "torch_geometric.utils._scatter.broadcast": "01eaf980bf11f755",
     "torch_geometric.utils._scatter.scatter": "60a748ab45d2266f",
     "torch_geometric.utils._spmm.spmm": "22de66762dc974cb",
     "torch_geometric.utils.loop.add_remaining_self_loops": "7fc0ae8d3d6f3f5a",
     "torch_geometric.utils.loop.add_self_loops": "8bc3453900972f1c",
     "torch_geometric.utils.loop.compute_loop_attr": "1b2c7f27947d5ad5",
     "torch_geometric.utils.num_nodes.maybe_num_nodes": "d818e742b4dd1dfc",
     "torch_geometric.utils.sparse.is_torch_sparse_tensor": "2717b5440caaba35",
     "torch_geometric.utils.sparse.set_sparse_value": "3e50e2bfbc3404b4",
     "torch_geometric.utils.sparse.to_edge_index": "1191198c16e75ad5",
     "torch_geometric.utils.sparse.to_torch_coo_tensor": "55337f53371be592",
     "torch_geometric.utils.sparse.to_torch_csr_tensor": "d997ed08926c9f7c",
     "torch_geometric.nn.conv.message_passing.MessagePassing.propagate:signature": "15a4a96beceb73da"
    }
   }
  ],
  "torch_geometric.nn.conv.gcn_conv.GCNConv": [
   {
    "verified_on": ["2.8.1", "2.9.0.dev20261027"],
    "functions": {
     "torch_geometric.nn.conv.gcn_conv.GCNConv.__init__": "899008ff75c1160f",
     "torch_geometric.nn.conv.gcn_conv.GCNConv.forward": "0caac3e7e6fbed5b",
     "torch_geometric.nn.conv.gcn_conv.GCNConv.message": "4861282efe375942",
     "torch_geometric.nn.conv.gcn_conv.GCNConv.message_and_aggregate": "e4763290e17edaff",
     "torch_geometric.nn.conv.gcn_conv.gcn_norm": "d9fc7784c8a02f57",
     "torch_geometric.nn.conv.message_passing.MessagePassing.aggregate": "7708b8806a341fdc",
     "torch_geometric.nn.conv.message_passing.MessagePassing.edge_update": "b2b99c7f3e2565fc",
     "torch_geometric.nn.conv.message_passing.MessagePassing.update": "c66298aa4b50c783",
     "torch_geometric.utils._coalesce.coalesce": "bc3017c8c6ccb212",
     "torch_geometric.utils._index_sort.index_sort": "b5e2c6af93ac5277",
     "torch_geometric.utils._scatter.broadcast": "01eaf980bf11f755",
     "torch_geometric.utils._scatter.scatter": "60a748ab45d2266f",
     "torch_geometric.utils._spmm.spmm": "22de66762dc974cb",
     "torch_geometric.utils.loop.add_remaining_self_loops": "7fc0ae8d3d6f3f5a",
     "torch_geometric.utils.loop.add_self_loops": "8bc3453900972f1c",
     "torch_geometric.utils.loop.compute_loop_attr": "1b2c7f27947d5ad5",
     "torch_geometric.utils.num_nodes.maybe_num_nodes": "d818e742b4dd1dfc",
     "torch_geometric.utils.sparse.is_torch_sparse_tensor": "2717b5440caaba35",
     "torch_geometric.utils.sparse.set_sparse_value": "3e50e2bfbc3404b4",
     "torch_geometric.utils.sparse.to_edge_index": "1191198c16e75ad5",
     "torch_geometric.utils.sparse.to_torch_coo_tensor": "55337f53371be592",
     "torch_geometric.utils.sparse.to_torch_csr_tensor": "d997ed08926c9f7c",
     "torch_geometric.nn.conv.message_passing.MessagePassing.propagate:signature": "15a4a96beceb73da"
    }
   }
  ],
  "torch_geometric.nn.conv.gen_conv.GENConv": [
   {
    "verified_on": ["2.8.1", "2.9.0.dev20261027"],
    "functions": {
     "torch_geometric.nn.conv.gen_conv.GENConv.__init__": "82775391fe1eee30",
     "torch_geometric.nn.conv.gen_conv.GENConv.forward": "2ca075afdc384f6d",
     "torch_geometric.nn.conv.gen_conv.GENConv.message": "f9c22f2a3bf02f1d",
     "torch_geometric.nn.conv.message_passing.MessagePassing.aggregate": "7708b8806a341fdc",
     "torch_geometric.nn.conv.message_passing.MessagePassing.edge_update": "b2b99c7f3e2565fc",
     "torch_geometric.nn.conv.message_passing.MessagePassing.message_and_aggregate": "59c894d27118e2f9",
     "torch_geometric.nn.conv.message_passing.MessagePassing.update": "c66298aa4b50c783",
     "torch_geometric.nn.conv.message_passing.MessagePassing.propagate:signature": "15a4a96beceb73da"
    }
   }
  ],
  "torch_geometric.nn.conv.gen_conv.MLP": [
   {
    "verified_on": ["2.8.1", "2.9.0.dev20261027"],
    "functions": {
     "torch_geometric.nn.conv.gen_conv.MLP.__init__": "44888a7b18237f72"
    }
   }
  ],
  "torch_geometric.nn.conv.general_conv.GeneralConv": [
   {
    "verified_on": ["2.8.1", "2.9.0.dev20261027"],
    "functions": {
     "torch_geometric.nn.conv.general_conv.GeneralConv.__init__": "eafc27555815e5e1",
     "torch_geometric.nn.conv.general_conv.GeneralConv.forward": "9bc36368157ef368",
     "torch_geometric.nn.conv.general_conv.GeneralConv.message": "0e0cedc59c96b991",
     "torch_geometric.nn.conv.general_conv.GeneralConv.message_basic": "2212b830179f9748",
     "torch_geometric.nn.conv.message_passing.MessagePassing.aggregate": "7708b8806a341fdc",
     "torch_geometric.nn.conv.message_passing.MessagePassing.edge_update": "b2b99c7f3e2565fc",
     "torch_geometric.nn.conv.message_passing.MessagePassing.message_and_aggregate": "59c894d27118e2f9",
     "torch_geometric.nn.conv.message_passing.MessagePassing.update": "c66298aa4b50c783",
     "torch_geometric.utils._scatter.broadcast": "01eaf980bf11f755",
     "torch_geometric.utils._scatter.scatter": "60a748ab45d2266f",
     "torch_geometric.utils._segment._torch_segment": "ca55b06f84d67aba",
     "torch_geometric.utils._segment.segment": "120b6d805e10484a",
     "torch_geometric.utils._softmax.softmax": "526253f0458ea923",
     "torch_geometric.utils.num_nodes.maybe_num_nodes": "d818e742b4dd1dfc",
     "torch_geometric.nn.conv.message_passing.MessagePassing.propagate:signature": "15a4a96beceb73da"
    }
   }
  ],
  "torch_geometric.nn.conv.gin_conv.GINConv": [
   {
    "verified_on": ["2.8.1", "2.9.0.dev20261027"],
    "functions": {
     "torch_geometric.nn.conv.gin_conv.GINConv.__init__": "8f03fe808348cd22",
     "torch_geometric.nn.conv.gin_conv.GINConv.forward": "ff1cc8a10d915596",
     "torch_geometric.nn.conv.gin_conv.GINConv.message": "e7d255c30d0baccf",
     "torch_geometric.nn.conv.gin_conv.GINConv.message_and_aggregate": "9197b6cc2584a818",
     "torch_geometric.nn.conv.message_passing.MessagePassing.aggregate": "7708b8806a341fdc",
     "torch_geometric.nn.conv.message_passing.MessagePassing.edge_update": "b2b99c7f3e2565fc",
     "torch_geometric.nn.conv.message_passing.MessagePassing.update": "c66298aa4b50c783",
     "torch_geometric.utils._scatter.broadcast": "01eaf980bf11f755",
     "torch_geometric.utils._scatter.scatter": "60a748ab45d2266f",
     "torch_geometric.utils._spmm.spmm": "22de66762dc974cb",
     "torch_geometric.utils.sparse.is_torch_sparse_tensor": "2717b5440caaba35",
     "torch_geometric.nn.conv.message_passing.MessagePassing.propagate:signature": "15a4a96beceb73da"
    }
   }
  ],
  "torch_geometric.nn.conv.gin_conv.GINEConv": [
   {
    "verified_on": ["2.8.1", "2.9.0.dev20261027"],
    "functions": {
     "torch_geometric.nn.conv.gin_conv.GINEConv.__init__": "3e1160b75b8deae4",
     "torch_geometric.nn.conv.gin_conv.GINEConv.forward": "2a783983a908879e",
     "torch_geometric.nn.conv.gin_conv.GINEConv.message": "bb75973e6d2289d5",
     "torch_geometric.nn.conv.message_passing.MessagePassing.aggregate": "7708b8806a341fdc",
     "torch_geometric.nn.conv.message_passing.MessagePassing.edge_update": "b2b99c7f3e2565fc",
     "torch_geometric.nn.conv.message_passing.MessagePassing.message_and_aggregate": "59c894d27118e2f9",
     "torch_geometric.nn.conv.message_passing.MessagePassing.update": "c66298aa4b50c783",
     "torch_geometric.nn.conv.message_passing.MessagePassing.propagate:signature": "15a4a96beceb73da"
    }
   }
  ],
  "torch_geometric.nn.conv.gmm_conv.GMMConv": [
   {
    "verified_on": ["2.8.1", "2.9.0.dev20261027"],
    "functions": {
     "torch_geometric.nn.conv.gmm_conv.GMMConv.__init__": "776ea39ed0157126",
     "torch_geometric.nn.conv.gmm_conv.GMMConv.forward": "0e1db00d8c271ba3",
     "torch_geometric.nn.conv.gmm_conv.GMMConv.initialize_parameters": "bcca2206685cf984",
     "torch_geometric.nn.conv.gmm_conv.GMMConv.message": "f0538e00351002aa",
     "torch_geometric.nn.conv.message_passing.MessagePassing.aggregate": "7708b8806a341fdc",
     "torch_geometric.nn.conv.message_passing.MessagePassing.edge_update": "b2b99c7f3e2565fc",
     "torch_geometric.nn.conv.message_passing.MessagePassing.message_and_aggregate": "59c894d27118e2f9",
     "torch_geometric.nn.conv.message_passing.MessagePassing.update": "c66298aa4b50c783",
     "torch_geometric.nn.inits.glorot": "1f63aaa744efdb5a",
     "torch_geometric.nn.conv.message_passing.MessagePassing.propagate:signature": "15a4a96beceb73da"
    }
   }
  ],
  "torch_geometric.nn.conv.gps_conv.GPSConv": [
   {
    "verified_on": ["2.8.1", "2.9.0.dev20261027"],
    "functions": {
     "torch_geometric.nn.conv.gps_conv.GPSConv.__init__": "27612b7880c9db45",
     "torch_geometric.nn.conv.gps_conv.GPSConv.forward": "9fa6493fdb3dba09",
     "torch_geometric.nn.resolver.activation_resolver": "6728949bc37d9a15",
     "torch_geometric.nn.resolver.normalization_resolver": "0614e3d69265a37f",
     "torch_geometric.nn.resolver.swish": "6dbf6fa02c64b65a",
     "torch_geometric.utils._scatter.broadcast": "01eaf980bf11f755",
     "torch_geometric.utils._scatter.scatter": "60a748ab45d2266f",
     "torch_geometric.utils._to_dense_batch.to_dense_batch": "760fca67c82e3fee",
     "torch_geometric.utils.functions.cumsum": "c3b42cafaf31cfa3"
    }
   }
  ],
  "torch_geometric.nn.conv.graph_conv.GraphConv": [
   {
    "verified_on": ["2.8.1", "2.9.0.dev20261027"],
    "functions": {
     "torch_geometric.nn.conv.graph_conv.GraphConv.__init__": "9e64436a5bf4aecf",
     "torch_geometric.nn.conv.graph_conv.GraphConv.forward": "607fc63c1b56c640",
     "torch_geometric.nn.conv.graph_conv.GraphConv.message": "4861282efe375942",
     "torch_geometric.nn.conv.graph_conv.GraphConv.message_and_aggregate": "1d77bdab5b7613cb",
     "torch_geometric.nn.conv.message_passing.MessagePassing.aggregate": "7708b8806a341fdc",
     "torch_geometric.nn.conv.message_passing.MessagePassing.edge_update": "b2b99c7f3e2565fc",
     "torch_geometric.nn.conv.message_passing.MessagePassing.update": "c66298aa4b50c783",
     "torch_geometric.utils._scatter.broadcast": "01eaf980bf11f755",
     "torch_geometric.utils._scatter.scatter": "60a748ab45d2266f",
     "torch_geometric.utils._spmm.spmm": "22de66762dc974cb",
     "torch_geometric.utils.sparse.is_torch_sparse_tensor": "2717b5440caaba35",
     "torch_geometric.nn.conv.message_passing.MessagePassing.propagate:signature": "15a4a96beceb73da"
    }
   }
  ],
  "torch_geometric.nn.conv.han_conv.HANConv": [
   {
    "verified_on": ["2.8.1", "2.9.0.dev20261027"],
    "functions": {
     "torch_geometric.nn.conv.han_conv.HANConv.__init__": "b506c95cd34221d5",
     "torch_geometric.nn.conv.han_conv.HANConv.forward": "d612b0f470107ab3",
     "torch_geometric.nn.conv.han_conv.HANConv.message": "5ae17506d1817cdc",
     "torch_geometric.nn.conv.han_conv.group": "ce86df01599206ef",
     "torch_geometric.nn.conv.message_passing.MessagePassing.aggregate": "7708b8806a341fdc",
     "torch_geometric.nn.conv.message_passing.MessagePassing.edge_update": "b2b99c7f3e2565fc",
     "torch_geometric.nn.conv.message_passing.MessagePassing.message_and_aggregate": "59c894d27118e2f9",
     "torch_geometric.nn.conv.message_passing.MessagePassing.update": "c66298aa4b50c783",
     "torch_geometric.utils._scatter.broadcast": "01eaf980bf11f755",
     "torch_geometric.utils._scatter.scatter": "60a748ab45d2266f",
     "torch_geometric.utils._segment._torch_segment": "ca55b06f84d67aba",
     "torch_geometric.utils._segment.segment": "120b6d805e10484a",
     "torch_geometric.utils._softmax.softmax": "526253f0458ea923",
     "torch_geometric.utils.num_nodes.maybe_num_nodes": "d818e742b4dd1dfc",
     "torch_geometric.nn.conv.message_passing.MessagePassing.propagate:signature": "15a4a96beceb73da"
    }
   }
  ],
  "torch_geometric.nn.conv.heat_conv.HEATConv": [
   {
    "verified_on": ["2.8.1", "2.9.0.dev20261027"],
    "functions": {
     "torch_geometric.nn.conv.heat_conv.HEATConv.__init__": "1b00076bef52fa6c",
     "torch_geometric.nn.conv.heat_conv.HEATConv.forward": "5d8e66848c18d623",
     "torch_geometric.nn.conv.heat_conv.HEATConv.message": "0261425589a37c20",
     "torch_geometric.nn.conv.message_passing.MessagePassing.aggregate": "7708b8806a341fdc",
     "torch_geometric.nn.conv.message_passing.MessagePassing.edge_update": "b2b99c7f3e2565fc",
     "torch_geometric.nn.conv.message_passing.MessagePassing.message_and_aggregate": "59c894d27118e2f9",
     "torch_geometric.nn.conv.message_passing.MessagePassing.update": "c66298aa4b50c783",
     "torch_geometric.utils._scatter.broadcast": "01eaf980bf11f755",
     "torch_geometric.utils._scatter.scatter": "60a748ab45d2266f",
     "torch_geometric.utils._segment._torch_segment": "ca55b06f84d67aba",
     "torch_geometric.utils._segment.segment": "120b6d805e10484a",
     "torch_geometric.utils._softmax.softmax": "526253f0458ea923",
     "torch_geometric.utils.num_nodes.maybe_num_nodes": "d818e742b4dd1dfc",
     "torch_geometric.nn.conv.message_passing.MessagePassing.propagate:signature": "15a4a96beceb73da"
    }
   }
  ],
  "torch_geometric.nn.conv.hetero_conv.HeteroConv": [
   {
    "verified_on": ["2.8.1", "2.9.0.dev20261027"],
    "functions": {
     "torch_geometric.nn.conv.hetero_conv.HeteroConv.__init__": "f63a0d050c56ea29",
     "torch_geometric.nn.conv.hetero_conv.HeteroConv.forward": "58681086b4b57a66",
     "torch_geometric.nn.conv.hetero_conv.group": "325ff18596d92615",
     "torch_geometric.utils.hetero.check_add_self_loops": "014db1495e32d8a6"
    }
   }
  ],
  "torch_geometric.nn.conv.hgt_conv.HGTConv": [
   {
    "verified_on": ["2.8.1", "2.9.0.dev20261027"],
    "functions": {
     "torch_geometric.nn.conv.hgt_conv.HGTConv.__init__": "0ce198e31f14ccd4",
     "torch_geometric.nn.conv.hgt_conv.HGTConv._cat": "daa86158b7c4399a",
     "torch_geometric.nn.conv.hgt_conv.HGTConv._construct_src_node_feat": "03316eebb3408e4c",
     "torch_geometric.nn.conv.hgt_conv.HGTConv.forward": "028996a20f3ae874",
     "torch_geometric.nn.conv.hgt_conv.HGTConv.message": "a5e39ebb82276ed6",
     "torch_geometric.nn.conv.message_passing.MessagePassing.aggregate": "7708b8806a341fdc",
     "torch_geometric.nn.conv.message_passing.MessagePassing.edge_update": "b2b99c7f3e2565fc",
     "torch_geometric.nn.conv.message_passing.MessagePassing.message_and_aggregate": "59c894d27118e2f9",
     "torch_geometric.nn.conv.message_passing.MessagePassing.update": "c66298aa4b50c783",
     "torch_geometric.utils._scatter.broadcast": "01eaf980bf11f755",
     "torch_geometric.utils._scatter.scatter": "60a748ab45d2266f",
     "torch_geometric.utils._segment._torch_segment": "ca55b06f84d67aba",
     "torch_geometric.utils._segment.segment": "120b6d805e10484a",
     "torch_geometric.utils._softmax.softmax": "526253f0458ea923",
     "torch_geometric.utils.hetero.construct_bipartite_edge_index": "b2011650b539509e",
     "torch_geometric.utils.num_nodes.maybe_num_nodes": "d818e742b4dd1dfc",
     "torch_geometric.utils.sparse.is_sparse": "bfc03ce674392815",
     "torch_geometric.utils.sparse.is_torch_sparse_tensor": "2717b5440caaba35",
     "torch_geometric.utils.sparse.to_edge_index": "1191198c16e75ad5",
     "torch_geometric.nn.conv.message_passing.MessagePassing.propagate:signature": "15a4a96beceb73da"
    }
   }
  ],
  "torch_geometric.nn.conv.le_conv.LEConv": [
   {
    "verified_on": ["2.8.1", "2.9.0.dev20261027"],
    "functions": {
     "torch_geometric.nn.conv.le_conv.LEConv.__init__": "2fb22698eaf0d2bb",
     "torch_geometric.nn.conv.le_conv.LEConv.forward": "736101b3516afa18",
     "torch_geometric.nn.conv.le_conv.LEConv.message": "885732943542d54c",
     "torch_geometric.nn.conv.message_passing.MessagePassing.aggregate": "7708b8806a341fdc",
     "torch_geometric.nn.conv.message_passing.MessagePassing.edge_update": "b2b99c7f3e2565fc",
     "torch_geometric.nn.conv.message_passing.MessagePassing.message_and_aggregate": "59c894d27118e2f9",
     "torch_geometric.nn.conv.message_passing.MessagePassing.update": "c66298aa4b50c783",
     "torch_geometric.nn.conv.message_passing.MessagePassing.propagate:signature": "15a4a96beceb73da"
    }
   }
  ],
  "torch_geometric.nn.conv.lg_conv.LGConv": [
   {
    "verified_on": ["2.8.1", "2.9.0.dev20261027"],
    "functions": {
     "torch_geometric.nn.conv.gcn_conv.gcn_norm": "d9fc7784c8a02f57",
     "torch_geometric.nn.conv.lg_conv.LGConv.__init__": "8e19f10296cbc15c",
     "torch_geometric.nn.conv.lg_conv.LGConv.forward": "e9432abe443fa1f2",
     "torch_geometric.nn.conv.lg_conv.LGConv.message": "4861282efe375942",
     "torch_geometric.nn.conv.lg_conv.LGConv.message_and_aggregate": "e4763290e17edaff",
     "torch_geometric.nn.conv.message_passing.MessagePassing.aggregate": "7708b8806a341fdc",
     "torch_geometric.nn.conv.message_passing.MessagePassing.edge_update": "b2b99c7f3e2565fc",
     "torch_geometric.nn.conv.message_passing.MessagePassing.update": "c66298aa4b50c783",
     "torch_geometric.utils._coalesce.coalesce": "bc3017c8c6ccb212",
     "torch_geometric.utils._index_sort.index_sort": "b5e2c6af93ac5277",
     "torch_geometric.utils._scatter.broadcast": "01eaf980bf11f755",
     "torch_geometric.utils._scatter.scatter": "60a748ab45d2266f",
     "torch_geometric.utils._spmm.spmm": "22de66762dc974cb",
     "torch_geometric.utils.loop.add_remaining_self_loops": "7fc0ae8d3d6f3f5a",
     "torch_geometric.utils.loop.add_self_loops": "8bc3453900972f1c",
     "torch_geometric.utils.loop.compute_loop_attr": "1b2c7f27947d5ad5",
     "torch_geometric.utils.num_nodes.maybe_num_nodes": "d818e742b4dd1dfc",
     "torch_geometric.utils.sparse.is_torch_sparse_tensor": "2717b5440caaba35",
     "torch_geometric.utils.sparse.set_sparse_value": "3e50e2bfbc3404b4",
     "torch_geometric.utils.sparse.to_edge_index": "1191198c16e75ad5",
     "torch_geometric.utils.sparse.to_torch_coo_tensor": "55337f53371be592",
     "torch_geometric.utils.sparse.to_torch_csr_tensor": "d997ed08926c9f7c",
     "torch_geometric.nn.conv.message_passing.MessagePassing.propagate:signature": "15a4a96beceb73da"
    }
   }
  ],
  "torch_geometric.nn.conv.mf_conv.MFConv": [
   {
    "verified_on": ["2.8.1", "2.9.0.dev20261027"],
    "functions": {
     "torch_geometric.nn.conv.message_passing.MessagePassing.aggregate": "7708b8806a341fdc",
     "torch_geometric.nn.conv.message_passing.MessagePassing.edge_update": "b2b99c7f3e2565fc",
     "torch_geometric.nn.conv.message_passing.MessagePassing.update": "c66298aa4b50c783",
     "torch_geometric.nn.conv.mf_conv.MFConv.__init__": "a97404d9140e700f",
     "torch_geometric.nn.conv.mf_conv.MFConv.forward": "398c8f84bd7f27b9",
     "torch_geometric.nn.conv.mf_conv.MFConv.message": "e7d255c30d0baccf",
     "torch_geometric.nn.conv.mf_conv.MFConv.message_and_aggregate": "9197b6cc2584a818",
     "torch_geometric.utils._degree.degree": "1380da1dc1429c3f",
     "torch_geometric.utils._scatter.broadcast": "01eaf980bf11f755",
     "torch_geometric.utils._scatter.scatter": "60a748ab45d2266f",
     "torch_geometric.utils._spmm.spmm": "22de66762dc974cb",
     "torch_geometric.utils.num_nodes.maybe_num_nodes": "d818e742b4dd1dfc",
     "torch_geometric.utils.sparse.is_torch_sparse_tensor": "2717b5440caaba35",
     "torch_geometric.nn.conv.message_passing.MessagePassing.propagate:signature": "15a4a96beceb73da"
    }
   }
  ],
  "torch_geometric.nn.conv.mixhop_conv.MixHopConv": [
   {
    "verified_on": ["2.8.1", "2.9.0.dev20261027"],
    "functions": {
     "torch_geometric.nn.conv.gcn_conv.gcn_norm": "d9fc7784c8a02f57",
     "torch_geometric.nn.conv.message_passing.MessagePassing.aggregate": "7708b8806a341fdc",
     "torch_geometric.nn.conv.message_passing.MessagePassing.edge_update": "b2b99c7f3e2565fc",
     "torch_geometric.nn.conv.message_passing.MessagePassing.update": "c66298aa4b50c783",
     "torch_geometric.nn.conv.mixhop_conv.MixHopConv.__init__": "5b60b9c3cddd0fab",
     "torch_geometric.nn.conv.mixhop_conv.MixHopConv.forward": "935e637a42bc04f3",
     "torch_geometric.nn.conv.mixhop_conv.MixHopConv.message": "4861282efe375942",
     "torch_geometric.nn.conv.mixhop_conv.MixHopConv.message_and_aggregate": "e4763290e17edaff",
     "torch_geometric.utils._coalesce.coalesce": "bc3017c8c6ccb212",
     "torch_geometric.utils._index_sort.index_sort": "b5e2c6af93ac5277",
     "torch_geometric.utils._scatter.broadcast": "01eaf980bf11f755",
     "torch_geometric.utils._scatter.scatter": "60a748ab45d2266f",
     "torch_geometric.utils._spmm.spmm": "22de66762dc974cb",
     "torch_geometric.utils.loop.add_remaining_self_loops": "7fc0ae8d3d6f3f5a",
     "torch_geometric.utils.loop.add_self_loops": "8bc3453900972f1c",
     "torch_geometric.utils.loop.compute_loop_attr": "1b2c7f27947d5ad5",
     "torch_geometric.utils.num_nodes.maybe_num_nodes": "d818e742b4dd1dfc",
     "torch_geometric.utils.sparse.is_torch_sparse_tensor": "2717b5440caaba35",
     "torch_geometric.utils.sparse.set_sparse_value": "3e50e2bfbc3404b4",
     "torch_geometric.utils.sparse.to_edge_index": "1191198c16e75ad5",
     "torch_geometric.utils.sparse.to_torch_coo_tensor": "55337f53371be592",
     "torch_geometric.utils.sparse.to_torch_csr_tensor": "d997ed08926c9f7c",
     "torch_geometric.nn.conv.message_passing.MessagePassing.propagate:signature": "15a4a96beceb73da"
    }
   }
  ],
  "torch_geometric.nn.conv.nn_conv.NNConv": [
   {
    "verified_on": ["2.8.1", "2.9.0.dev20261027"],
    "functions": {
     "torch_geometric.nn.conv.message_passing.MessagePassing.aggregate": "7708b8806a341fdc",
     "torch_geometric.nn.conv.message_passing.MessagePassing.edge_update": "b2b99c7f3e2565fc",
     "torch_geometric.nn.conv.message_passing.MessagePassing.message_and_aggregate": "59c894d27118e2f9",
     "torch_geometric.nn.conv.message_passing.MessagePassing.update": "c66298aa4b50c783",
     "torch_geometric.nn.conv.nn_conv.NNConv.__init__": "a8459329e91adeae",
     "torch_geometric.nn.conv.nn_conv.NNConv.forward": "bbfe306dcdc83fc3",
     "torch_geometric.nn.conv.nn_conv.NNConv.message": "20b0b29b0c23797e",
     "torch_geometric.nn.conv.message_passing.MessagePassing.propagate:signature": "15a4a96beceb73da"
    }
   }
  ],
  "torch_geometric.nn.conv.pdn_conv.PDNConv": [
   {
    "verified_on": ["2.8.1", "2.9.0.dev20261027"],
    "functions": {
     "torch_geometric.nn.conv.gcn_conv.gcn_norm": "d9fc7784c8a02f57",
     "torch_geometric.nn.conv.message_passing.MessagePassing.aggregate": "7708b8806a341fdc",
     "torch_geometric.nn.conv.message_passing.MessagePassing.edge_update": "b2b99c7f3e2565fc",
     "torch_geometric.nn.conv.message_passing.MessagePassing.update": "c66298aa4b50c783",
     "torch_geometric.nn.conv.pdn_conv.PDNConv.__init__": "1553e3abcbc328d8",
     "torch_geometric.nn.conv.pdn_conv.PDNConv.forward": "ba9158b71d1061b8",
     "torch_geometric.nn.conv.pdn_conv.PDNConv.message": "5566cd24926de9fd",
     "torch_geometric.nn.conv.pdn_conv.PDNConv.message_and_aggregate": "e4763290e17edaff",
     "torch_geometric.utils._coalesce.coalesce": "bc3017c8c6ccb212",
     "torch_geometric.utils._index_sort.index_sort": "b5e2c6af93ac5277",
     "torch_geometric.utils._scatter.broadcast": "01eaf980bf11f755",
     "torch_geometric.utils._scatter.scatter": "60a748ab45d2266f",
     "torch_geometric.utils._spmm.spmm": "22de66762dc974cb",
     "torch_geometric.utils.loop.add_remaining_self_loops": "7fc0ae8d3d6f3f5a",
     "torch_geometric.utils.loop.add_self_loops": "8bc3453900972f1c",
     "torch_geometric.utils.loop.compute_loop_attr": "1b2c7f27947d5ad5",
     "torch_geometric.utils.num_nodes.maybe_num_nodes": "d818e742b4dd1dfc",
     "torch_geometric.utils.sparse.is_torch_sparse_tensor": "2717b5440caaba35",
     "torch_geometric.utils.sparse.set_sparse_value": "3e50e2bfbc3404b4",
     "torch_geometric.utils.sparse.to_edge_index": "1191198c16e75ad5",
     "torch_geometric.utils.sparse.to_torch_coo_tensor": "55337f53371be592",
     "torch_geometric.utils.sparse.to_torch_csr_tensor": "d997ed08926c9f7c",
     "torch_geometric.nn.conv.message_passing.MessagePassing.propagate:signature": "15a4a96beceb73da"
    }
   }
  ],
  "torch_geometric.nn.conv.pna_conv.PNAConv": [
   {
    "verified_on": ["2.8.1", "2.9.0.dev20261027"],
    "functions": {
     "torch_geometric.nn.conv.message_passing.MessagePassing.aggregate": "7708b8806a341fdc",
     "torch_geometric.nn.conv.message_passing.MessagePassing.edge_update": "b2b99c7f3e2565fc",
     "torch_geometric.nn.conv.message_passing.MessagePassing.message_and_aggregate": "59c894d27118e2f9",
     "torch_geometric.nn.conv.message_passing.MessagePassing.update": "c66298aa4b50c783",
     "torch_geometric.nn.conv.pna_conv.PNAConv.__init__": "e0577bfdba47fb31",
     "torch_geometric.nn.conv.pna_conv.PNAConv.forward": "3a326b9c141f7e13",
     "torch_geometric.nn.conv.pna_conv.PNAConv.get_degree_histogram": "6c304f72f23626c3",
     "torch_geometric.nn.conv.pna_conv.PNAConv.message": "517fa1e537261ace",
     "torch_geometric.nn.resolver.activation_resolver": "6728949bc37d9a15",
     "torch_geometric.nn.resolver.swish": "6dbf6fa02c64b65a",
     "torch_geometric.utils._degree.degree": "1380da1dc1429c3f",
     "torch_geometric.utils.num_nodes.maybe_num_nodes": "d818e742b4dd1dfc",
     "torch_geometric.nn.conv.message_passing.MessagePassing.propagate:signature": "15a4a96beceb73da"
    }
   }
  ],
  "torch_geometric.nn.conv.point_conv.PointNetConv": [
   {
    "verified_on": ["2.8.1", "2.9.0.dev20261027"],
    "functions": {
     "torch_geometric.nn.conv.message_passing.MessagePassing.aggregate": "7708b8806a341fdc",
     "torch_geometric.nn.conv.message_passing.MessagePassing.edge_update": "b2b99c7f3e2565fc",
     "torch_geometric.nn.conv.message_passing.MessagePassing.message_and_aggregate": "59c894d27118e2f9",
     "torch_geometric.nn.conv.message_passing.MessagePassing.update": "c66298aa4b50c783",
     "torch_geometric.nn.conv.point_conv.PointNetConv.__init__": "865d048c312517fb",
     "torch_geometric.nn.conv.point_conv.PointNetConv.forward": "5446b2f2fc8e1a47",
     "torch_geometric.nn.conv.point_conv.PointNetConv.message": "35562694ae22dce3",
     "torch_geometric.utils._coalesce.coalesce": "bc3017c8c6ccb212",
     "torch_geometric.utils._index_sort.index_sort": "b5e2c6af93ac5277",
     "torch_geometric.utils._scatter.broadcast": "01eaf980bf11f755",
     "torch_geometric.utils._scatter.scatter": "60a748ab45d2266f",
     "torch_geometric.utils.loop.add_self_loops": "8bc3453900972f1c",
     "torch_geometric.utils.loop.compute_loop_attr": "1b2c7f27947d5ad5",
     "torch_geometric.utils.loop.remove_self_loops": "04f79d4d2c48f838",
     "torch_geometric.utils.num_nodes.maybe_num_nodes": "d818e742b4dd1dfc",
     "torch_geometric.utils.sparse.is_torch_sparse_tensor": "2717b5440caaba35",
     "torch_geometric.utils.sparse.to_edge_index": "1191198c16e75ad5",
     "torch_geometric.utils.sparse.to_torch_coo_tensor": "55337f53371be592",
     "torch_geometric.utils.sparse.to_torch_csr_tensor": "d997ed08926c9f7c",
     "torch_geometric.nn.conv.message_passing.MessagePassing.propagate:signature": "15a4a96beceb73da"
    }
   }
  ],
  "torch_geometric.nn.conv.point_gnn_conv.PointGNNConv": [
   {
    "verified_on": ["2.8.1", "2.9.0.dev20261027"],
    "functions": {
     "torch_geometric.nn.conv.message_passing.MessagePassing.aggregate": "7708b8806a341fdc",
     "torch_geometric.nn.conv.message_passing.MessagePassing.edge_update": "b2b99c7f3e2565fc",
     "torch_geometric.nn.conv.message_passing.MessagePassing.message_and_aggregate": "59c894d27118e2f9",
     "torch_geometric.nn.conv.message_passing.MessagePassing.update": "c66298aa4b50c783",
     "torch_geometric.nn.conv.point_gnn_conv.PointGNNConv.__init__": "b475f36a712838f3",
     "torch_geometric.nn.conv.point_gnn_conv.PointGNNConv.forward": "b14716ad31ea7f10",
     "torch_geometric.nn.conv.point_gnn_conv.PointGNNConv.message": "b26c451447bc673e",
     "torch_geometric.nn.conv.message_passing.MessagePassing.propagate:signature": "15a4a96beceb73da"
    }
   }
  ],
  "torch_geometric.nn.conv.point_transformer_conv.PointTransformerConv": [
   {
    "verified_on": ["2.8.1", "2.9.0.dev20261027"],
    "functions": {
     "torch_geometric.nn.conv.message_passing.MessagePassing.aggregate": "7708b8806a341fdc",
     "torch_geometric.nn.conv.message_passing.MessagePassing.edge_update": "b2b99c7f3e2565fc",
     "torch_geometric.nn.conv.message_passing.MessagePassing.message_and_aggregate": "59c894d27118e2f9",
     "torch_geometric.nn.conv.message_passing.MessagePassing.update": "c66298aa4b50c783",
     "torch_geometric.nn.conv.point_transformer_conv.PointTransformerConv.__init__": "cb32a660006b74d9",
     "torch_geometric.nn.conv.point_transformer_conv.PointTransformerConv.forward": "b28842c673a98fbe",
     "torch_geometric.nn.conv.point_transformer_conv.PointTransformerConv.message": "ae13c2fcb843ba68",
     "torch_geometric.utils._coalesce.coalesce": "bc3017c8c6ccb212",
     "torch_geometric.utils._index_sort.index_sort": "b5e2c6af93ac5277",
     "torch_geometric.utils._scatter.broadcast": "01eaf980bf11f755",
     "torch_geometric.utils._scatter.scatter": "60a748ab45d2266f",
     "torch_geometric.utils._segment._torch_segment": "ca55b06f84d67aba",
     "torch_geometric.utils._segment.segment": "120b6d805e10484a",
     "torch_geometric.utils._softmax.softmax": "526253f0458ea923",
     "torch_geometric.utils.loop.add_self_loops": "8bc3453900972f1c",
     "torch_geometric.utils.loop.compute_loop_attr": "1b2c7f27947d5ad5",
     "torch_geometric.utils.loop.remove_self_loops": "04f79d4d2c48f838",
     "torch_geometric.utils.num_nodes.maybe_num_nodes": "d818e742b4dd1dfc",
     "torch_geometric.utils.sparse.is_torch_sparse_tensor": "2717b5440caaba35",
     "torch_geometric.utils.sparse.to_edge_index": "1191198c16e75ad5",
     "torch_geometric.utils.sparse.to_torch_coo_tensor": "55337f53371be592",
     "torch_geometric.utils.sparse.to_torch_csr_tensor": "d997ed08926c9f7c",
     "torch_geometric.nn.conv.message_passing.MessagePassing.propagate:signature": "15a4a96beceb73da"
    }
   }
  ],
  "torch_geometric.nn.conv.ppf_conv.PPFConv": [
   {
    "verified_on": ["2.8.1", "2.9.0.dev20261027"],
    "functions": {
     "torch_geometric.nn.conv.message_passing.MessagePassing.aggregate": "7708b8806a341fdc",
     "torch_geometric.nn.conv.message_passing.MessagePassing.edge_update": "b2b99c7f3e2565fc",
     "torch_geometric.nn.conv.message_passing.MessagePassing.message_and_aggregate": "59c894d27118e2f9",
     "torch_geometric.nn.conv.message_passing.MessagePassing.update": "c66298aa4b50c783",
     "torch_geometric.nn.conv.ppf_conv.PPFConv.__init__": "865d048c312517fb",
     "torch_geometric.nn.conv.ppf_conv.PPFConv.forward": "66fa437cf6c1a11b",
     "torch_geometric.nn.conv.ppf_conv.PPFConv.message": "e38ac017508191e5",
     "torch_geometric.nn.conv.ppf_conv.get_angle": "04637467e9e97cf6",
     "torch_geometric.nn.conv.ppf_conv.point_pair_features": "ec25e1b3ef9bd917",
     "torch_geometric.utils._coalesce.coalesce": "bc3017c8c6ccb212",
     "torch_geometric.utils._index_sort.index_sort": "b5e2c6af93ac5277",
     "torch_geometric.utils._scatter.broadcast": "01eaf980bf11f755",
     "torch_geometric.utils._scatter.scatter": "60a748ab45d2266f",
     "torch_geometric.utils.loop.add_self_loops": "8bc3453900972f1c",
     "torch_geometric.utils.loop.compute_loop_attr": "1b2c7f27947d5ad5",
     "torch_geometric.utils.loop.remove_self_loops": "04f79d4d2c48f838",
     "torch_geometric.utils.num_nodes.maybe_num_nodes": "d818e742b4dd1dfc",
     "torch_geometric.utils.sparse.is_torch_sparse_tensor": "2717b5440caaba35",
     "torch_geometric.utils.sparse.to_edge_index": "1191198c16e75ad5",
     "torch_geometric.utils.sparse.to_torch_coo_tensor": "55337f53371be592",
     "torch_geometric.utils.sparse.to_torch_csr_tensor": "d997ed08926c9f7c",
     "torch_geometric.nn.conv.message_passing.MessagePassing.propagate:signature": "15a4a96beceb73da"
    }
   }
  ],
  "torch_geometric.nn.conv.res_gated_graph_conv.ResGatedGraphConv": [
   {
    "verified_on": ["2.8.1", "2.9.0.dev20261027"],
    "functions": {
     "torch_geometric.nn.conv.message_passing.MessagePassing.aggregate": "7708b8806a341fdc",
     "torch_geometric.nn.conv.message_passing.MessagePassing.edge_update": "b2b99c7f3e2565fc",
     "torch_geometric.nn.conv.message_passing.MessagePassing.message_and_aggregate": "59c894d27118e2f9",
     "torch_geometric.nn.conv.message_passing.MessagePassing.update": "c66298aa4b50c783",
     "torch_geometric.nn.conv.res_gated_graph_conv.ResGatedGraphConv.__init__": "8c1249f2b3b08424",
     "torch_geometric.nn.conv.res_gated_graph_conv.ResGatedGraphConv.forward": "26787c41fab0d3ea",
     "torch_geometric.nn.conv.res_gated_graph_conv.ResGatedGraphConv.message": "f5a247d45b331ad4",
     "torch_geometric.nn.conv.message_passing.MessagePassing.propagate:signature": "15a4a96beceb73da"
    }
   }
  ],
  "torch_geometric.nn.conv.rgat_conv.RGATConv": [
   {
    "verified_on": ["2.8.1", "2.9.0.dev20261027"],
    "functions": {
     "torch_geometric.nn.conv.message_passing.MessagePassing.aggregate": "7708b8806a341fdc",
     "torch_geometric.nn.conv.message_passing.MessagePassing.edge_update": "b2b99c7f3e2565fc",
     "torch_geometric.nn.conv.message_passing.MessagePassing.message_and_aggregate": "59c894d27118e2f9",
     "torch_geometric.nn.conv.rgat_conv.RGATConv.__init__": "3ce2dbb0b89ea1cd",
     "torch_geometric.nn.conv.rgat_conv.RGATConv.forward": "fb34f01ee29d8037",
     "torch_geometric.nn.conv.rgat_conv.RGATConv.message": "531882023258e740",
     "torch_geometric.nn.conv.rgat_conv.RGATConv.update": "15088c5c6e275aee",
     "torch_geometric.nn.inits.constant": "2b91ddad8ba75d5f",
     "torch_geometric.nn.inits.ones": "2b007ce6e9b78673",
     "torch_geometric.utils._coalesce.coalesce": "bc3017c8c6ccb212",
     "torch_geometric.utils._index_sort.index_sort": "b5e2c6af93ac5277",
     "torch_geometric.utils._scatter.broadcast": "01eaf980bf11f755",
     "torch_geometric.utils._scatter.scatter": "60a748ab45d2266f",
     "torch_geometric.utils._segment._torch_segment": "ca55b06f84d67aba",
     "torch_geometric.utils._segment.segment": "120b6d805e10484a",
     "torch_geometric.utils._softmax.softmax": "526253f0458ea923",
     "torch_geometric.utils.num_nodes.maybe_num_nodes": "d818e742b4dd1dfc",
     "torch_geometric.utils.sparse.is_torch_sparse_tensor": "2717b5440caaba35",
     "torch_geometric.utils.sparse.set_sparse_value": "3e50e2bfbc3404b4",
     "torch_geometric.nn.conv.message_passing.MessagePassing.propagate:signature": "15a4a96beceb73da"
    }
   }
  ],
  "torch_geometric.nn.conv.rgcn_conv.FastRGCNConv": [
   {
    "verified_on": ["2.8.1", "2.9.0.dev20261027"],
    "functions": {
     "torch_geometric.nn.conv.message_passing.MessagePassing.edge_update": "b2b99c7f3e2565fc",
     "torch_geometric.nn.conv.message_passing.MessagePassing.update": "c66298aa4b50c783",
     "torch_geometric.nn.conv.rgcn_conv.FastRGCNConv.aggregate": "f39eeeaf4973d368",
     "torch_geometric.nn.conv.rgcn_conv.FastRGCNConv.forward": "5df3379bbe6dc222",
     "torch_geometric.nn.conv.rgcn_conv.FastRGCNConv.message": "1502c6de21115c9e",
     "torch_geometric.nn.conv.rgcn_conv.RGCNConv.__init__": "8ec705935561d1e0",
     "torch_geometric.nn.conv.rgcn_conv.RGCNConv.message_and_aggregate": "036f1607efacfc52",
     "torch_geometric.utils._one_hot.one_hot": "ee02194945bb335d",
     "torch_geometric.utils._scatter.broadcast": "01eaf980bf11f755",
     "torch_geometric.utils._scatter.scatter": "60a748ab45d2266f",
     "torch_geometric.utils._spmm.spmm": "22de66762dc974cb",
     "torch_geometric.utils.sparse.is_torch_sparse_tensor": "2717b5440caaba35",
     "torch_geometric.nn.conv.message_passing.MessagePassing.propagate:signature": "15a4a96beceb73da"
    }
   }
  ],
  "torch_geometric.nn.conv.rgcn_conv.RGCNConv": [
   {
    "verified_on": ["2.8.1", "2.9.0.dev20261027"],
    "functions": {
     "torch_geometric.nn.conv.message_passing.MessagePassing.aggregate": "7708b8806a341fdc",
     "torch_geometric.nn.conv.message_passing.MessagePassing.edge_update": "b2b99c7f3e2565fc",
     "torch_geometric.nn.conv.message_passing.MessagePassing.update": "c66298aa4b50c783",
     "torch_geometric.nn.conv.rgcn_conv.RGCNConv.__init__": "8ec705935561d1e0",
     "torch_geometric.nn.conv.rgcn_conv.RGCNConv.forward": "407a2465abde58d8",
     "torch_geometric.nn.conv.rgcn_conv.RGCNConv.message": "689a2ed1b4473248",
     "torch_geometric.nn.conv.rgcn_conv.RGCNConv.message_and_aggregate": "036f1607efacfc52",
     "torch_geometric.nn.conv.rgcn_conv.masked_edge_index": "903137080a3f354e",
     "torch_geometric.nn.inits.constant": "2b91ddad8ba75d5f",
     "torch_geometric.nn.inits.zeros": "fe9ccdf078c9c97a",
     "torch_geometric.utils._index_sort.index_sort": "b5e2c6af93ac5277",
     "torch_geometric.utils._scatter.broadcast": "01eaf980bf11f755",
     "torch_geometric.utils._scatter.scatter": "60a748ab45d2266f",
     "torch_geometric.utils._spmm.spmm": "22de66762dc974cb",
     "torch_geometric.utils.sparse.is_torch_sparse_tensor": "2717b5440caaba35",
     "torch_geometric.nn.conv.message_passing.MessagePassing.propagate:signature": "15a4a96beceb73da"
    }
   }
  ],
  "torch_geometric.nn.conv.sage_conv.SAGEConv": [
   {
    "verified_on": ["2.8.1", "2.9.0.dev20261027"],
    "functions": {
     "torch_geometric.nn.conv.message_passing.MessagePassing.aggregate": "7708b8806a341fdc",
     "torch_geometric.nn.conv.message_passing.MessagePassing.edge_update": "b2b99c7f3e2565fc",
     "torch_geometric.nn.conv.message_passing.MessagePassing.update": "c66298aa4b50c783",
     "torch_geometric.nn.conv.sage_conv.SAGEConv.__init__": "6f5b28c5d388b62e",
     "torch_geometric.nn.conv.sage_conv.SAGEConv.forward": "abbf638f8f77fe31",
     "torch_geometric.nn.conv.sage_conv.SAGEConv.message": "e7d255c30d0baccf",
     "torch_geometric.nn.conv.sage_conv.SAGEConv.message_and_aggregate": "9197b6cc2584a818",
     "torch_geometric.utils._scatter.broadcast": "01eaf980bf11f755",
     "torch_geometric.utils._scatter.scatter": "60a748ab45d2266f",
     "torch_geometric.utils._spmm.spmm": "22de66762dc974cb",
     "torch_geometric.utils.sparse.is_torch_sparse_tensor": "2717b5440caaba35",
     "torch_geometric.nn.conv.message_passing.MessagePassing.propagate:signature": "15a4a96beceb73da"
    }
   }
  ],
  "torch_geometric.nn.conv.sg_conv.SGConv": [
   {
    "verified_on": ["2.8.1", "2.9.0.dev20261027"],
    "functions": {
     "torch_geometric.nn.conv.gcn_conv.gcn_norm": "d9fc7784c8a02f57",
     "torch_geometric.nn.conv.message_passing.MessagePassing.aggregate": "7708b8806a341fdc",
     "torch_geometric.nn.conv.message_passing.MessagePassing.edge_update": "b2b99c7f3e2565fc",
     "torch_geometric.nn.conv.message_passing.MessagePassing.update": "c66298aa4b50c783",
     "torch_geometric.nn.conv.sg_conv.SGConv.__init__": "a0df6841339f5bc0",
     "torch_geometric.nn.conv.sg_conv.SGConv.forward": "4d5b2bc2e70434a3",
     "torch_geometric.nn.conv.sg_conv.SGConv.message": "5566cd24926de9fd",
     "torch_geometric.nn.conv.sg_conv.SGConv.message_and_aggregate": "e4763290e17edaff",
     "torch_geometric.utils._coalesce.coalesce": "bc3017c8c6ccb212",
     "torch_geometric.utils._index_sort.index_sort": "b5e2c6af93ac5277",
     "torch_geometric.utils._scatter.broadcast": "01eaf980bf11f755",
     "torch_geometric.utils._scatter.scatter": "60a748ab45d2266f",
     "torch_geometric.utils._spmm.spmm": "22de66762dc974cb",
     "torch_geometric.utils.loop.add_remaining_self_loops": "7fc0ae8d3d6f3f5a",
     "torch_geometric.utils.loop.add_self_loops": "8bc3453900972f1c",
     "torch_geometric.utils.loop.compute_loop_attr": "1b2c7f27947d5ad5",
     "torch_geometric.utils.num_nodes.maybe_num_nodes": "d818e742b4dd1dfc",
     "torch_geometric.utils.sparse.is_torch_sparse_tensor": "2717b5440caaba35",
     "torch_geometric.utils.sparse.set_sparse_value": "3e50e2bfbc3404b4",
     "torch_geometric.utils.sparse.to_edge_index": "1191198c16e75ad5",
     "torch_geometric.utils.sparse.to_torch_coo_tensor": "55337f53371be592",
     "torch_geometric.utils.sparse.to_torch_csr_tensor": "d997ed08926c9f7c",
     "torch_geometric.nn.conv.message_passing.MessagePassing.propagate:signature": "15a4a96beceb73da"
    }
   }
  ],
  "torch_geometric.nn.conv.simple_conv.SimpleConv": [
   {
    "verified_on": ["2.8.1", "2.9.0.dev20261027"],
    "functions": {
     "torch_geometric.nn.conv.message_passing.MessagePassing.aggregate": "7708b8806a341fdc",
     "torch_geometric.nn.conv.message_passing.MessagePassing.edge_update": "b2b99c7f3e2565fc",
     "torch_geometric.nn.conv.message_passing.MessagePassing.update": "c66298aa4b50c783",
     "torch_geometric.nn.conv.simple_conv.SimpleConv.__init__": "401e78774ed977f8",
     "torch_geometric.nn.conv.simple_conv.SimpleConv.forward": "353c5ceb7b76b498",
     "torch_geometric.nn.conv.simple_conv.SimpleConv.message": "4861282efe375942",
     "torch_geometric.nn.conv.simple_conv.SimpleConv.message_and_aggregate": "98b7a709670396c6",
     "torch_geometric.utils._coalesce.coalesce": "bc3017c8c6ccb212",
     "torch_geometric.utils._index_sort.index_sort": "b5e2c6af93ac5277",
     "torch_geometric.utils._scatter.broadcast": "01eaf980bf11f755",
     "torch_geometric.utils._scatter.scatter": "60a748ab45d2266f",
     "torch_geometric.utils._spmm.spmm": "22de66762dc974cb",
     "torch_geometric.utils.loop.add_self_loops": "8bc3453900972f1c",
     "torch_geometric.utils.loop.compute_loop_attr": "1b2c7f27947d5ad5",
     "torch_geometric.utils.num_nodes.maybe_num_nodes": "d818e742b4dd1dfc",
     "torch_geometric.utils.sparse.is_torch_sparse_tensor": "2717b5440caaba35",
     "torch_geometric.utils.sparse.to_edge_index": "1191198c16e75ad5",
     "torch_geometric.utils.sparse.to_torch_coo_tensor": "55337f53371be592",
     "torch_geometric.utils.sparse.to_torch_csr_tensor": "d997ed08926c9f7c",
     "torch_geometric.nn.conv.message_passing.MessagePassing.propagate:signature": "15a4a96beceb73da"
    }
   }
  ],
  "torch_geometric.nn.conv.ssg_conv.SSGConv": [
   {
    "verified_on": ["2.8.1", "2.9.0.dev20261027"],
    "functions": {
     "torch_geometric.nn.conv.gcn_conv.gcn_norm": "d9fc7784c8a02f57",
     "torch_geometric.nn.conv.message_passing.MessagePassing.aggregate": "7708b8806a341fdc",
     "torch_geometric.nn.conv.message_passing.MessagePassing.edge_update": "b2b99c7f3e2565fc",
     "torch_geometric.nn.conv.message_passing.MessagePassing.update": "c66298aa4b50c783",
     "torch_geometric.nn.conv.ssg_conv.SSGConv.__init__": "e3feb5199281ea3b",
     "torch_geometric.nn.conv.ssg_conv.SSGConv.forward": "1df44b3ddb6eae9a",
     "torch_geometric.nn.conv.ssg_conv.SSGConv.message": "5566cd24926de9fd",
     "torch_geometric.nn.conv.ssg_conv.SSGConv.message_and_aggregate": "e4763290e17edaff",
     "torch_geometric.utils._coalesce.coalesce": "bc3017c8c6ccb212",
     "torch_geometric.utils._index_sort.index_sort": "b5e2c6af93ac5277",
     "torch_geometric.utils._scatter.broadcast": "01eaf980bf11f755",
     "torch_geometric.utils._scatter.scatter": "60a748ab45d2266f",
     "torch_geometric.utils._spmm.spmm": "22de66762dc974cb",
     "torch_geometric.utils.loop.add_remaining_self_loops": "7fc0ae8d3d6f3f5a",
     "torch_geometric.utils.loop.add_self_loops": "8bc3453900972f1c",
     "torch_geometric.utils.loop.compute_loop_attr": "1b2c7f27947d5ad5",
     "torch_geometric.utils.num_nodes.maybe_num_nodes": "d818e742b4dd1dfc",
     "torch_geometric.utils.sparse.is_torch_sparse_tensor": "2717b5440caaba35",
     "torch_geometric.utils.sparse.set_sparse_value": "3e50e2bfbc3404b4",
     "torch_geometric.utils.sparse.to_edge_index": "1191198c16e75ad5",
     "torch_geometric.utils.sparse.to_torch_coo_tensor": "55337f53371be592",
     "torch_geometric.utils.sparse.to_torch_csr_tensor": "d997ed08926c9f7c",
     "torch_geometric.nn.conv.message_passing.MessagePassing.propagate:signature": "15a4a96beceb73da"
    }
   }
  ],
  "torch_geometric.nn.conv.supergat_conv.SuperGATConv": [
   {
    "verified_on": ["2.8.1", "2.9.0.dev20261027"],
    "functions": {
     "torch_geometric.nn.conv.message_passing.MessagePassing.aggregate": "7708b8806a341fdc",
     "torch_geometric.nn.conv.message_passing.MessagePassing.edge_update": "b2b99c7f3e2565fc",
     "torch_geometric.nn.conv.message_passing.MessagePassing.message_and_aggregate": "59c894d27118e2f9",
     "torch_geometric.nn.conv.message_passing.MessagePassing.update": "c66298aa4b50c783",
     "torch_geometric.nn.conv.supergat_conv.SuperGATConv.__init__": "a3213b1f231d8ac8",
     "torch_geometric.nn.conv.supergat_conv.SuperGATConv.forward": "19fa5e19c4a63c59",
     "torch_geometric.nn.conv.supergat_conv.SuperGATConv.get_attention": "2406e244adf29dc5",
     "torch_geometric.nn.conv.supergat_conv.SuperGATConv.get_attention_loss": "17f8c9e61a11ce8d",
     "torch_geometric.nn.conv.supergat_conv.SuperGATConv.message": "a40e6c8ecd5218ad",
     "torch_geometric.nn.conv.supergat_conv.SuperGATConv.negative_sampling": "0af02077d64fa430",
     "torch_geometric.nn.conv.supergat_conv.SuperGATConv.positive_sampling": "ba342ed85d50dd7d",
     "torch_geometric.utils._coalesce.coalesce": "bc3017c8c6ccb212",
     "torch_geometric.utils._degree.degree": "1380da1dc1429c3f",
     "torch_geometric.utils._index_sort.index_sort": "b5e2c6af93ac5277",
     "torch_geometric.utils._lexsort.lexsort": "1ce0495e0867919b",
     "torch_geometric.utils._negative_sampling.batched_negative_sampling": "a222955732f5e378",
     "torch_geometric.utils._negative_sampling.edge_index_to_vector": "fb4ab9c454a7b91d",
     "torch_geometric.utils._negative_sampling.negative_sampling": "bd583aacf15fbd90",
     "torch_geometric.utils._negative_sampling.sample": "ce8183aac9ba1d79",
     "torch_geometric.utils._negative_sampling.vector_to_edge_index": "d21c09660e35a8c5",
     "torch_geometric.utils._scatter.broadcast": "01eaf980bf11f755",
     "torch_geometric.utils._scatter.scatter": "60a748ab45d2266f",
     "torch_geometric.utils._segment._torch_segment": "ca55b06f84d67aba",
     "torch_geometric.utils._segment.segment": "120b6d805e10484a",
     "torch_geometric.utils._softmax.softmax": "526253f0458ea923",
     "torch_geometric.utils._sort_edge_index.sort_edge_index": "af78a1756df93620",
     "torch_geometric.utils.dropout.dropout_edge": "91ca5d8378cb4681",
     "torch_geometric.utils.functions.cumsum": "c3b42cafaf31cfa3",
     "torch_geometric.utils.loop.add_self_loops": "8bc3453900972f1c",
     "torch_geometric.utils.loop.compute_loop_attr": "1b2c7f27947d5ad5",
     "torch_geometric.utils.loop.remove_self_loops": "04f79d4d2c48f838",
     "torch_geometric.utils.num_nodes.maybe_num_nodes": "d818e742b4dd1dfc",
     "torch_geometric.utils.sparse.is_torch_sparse_tensor": "2717b5440caaba35",
     "torch_geometric.utils.sparse.to_edge_index": "1191198c16e75ad5",
     "torch_geometric.utils.sparse.to_torch_coo_tensor": "55337f53371be592",
     "torch_geometric.utils.sparse.to_torch_csr_tensor": "d997ed08926c9f7c",
     "torch_geometric.utils.undirected.is_undirected": "760b22a43f7e4e13",
     "torch_geometric.utils.undirected.to_undirected": "2baa4073a642bc34",
     "torch_geometric.nn.conv.message_passing.MessagePassing.propagate:signature": "15a4a96beceb73da"
    }
   }
  ],
  "torch_geometric.nn.conv.tag_conv.TAGConv": [
   {
    "verified_on": ["2.8.1", "2.9.0.dev20261027"],
    "functions": {
     "torch_geometric.nn.conv.gcn_conv.gcn_norm": "d9fc7784c8a02f57",
     "torch_geometric.nn.conv.message_passing.MessagePassing.aggregate": "7708b8806a341fdc",
     "torch_geometric.nn.conv.message_passing.MessagePassing.edge_update": "b2b99c7f3e2565fc",
     "torch_geometric.nn.conv.message_passing.MessagePassing.update": "c66298aa4b50c783",
     "torch_geometric.nn.conv.tag_conv.TAGConv.__init__": "98d86474d998f191",
     "torch_geometric.nn.conv.tag_conv.TAGConv.forward": "897831e1c2836501",
     "torch_geometric.nn.conv.tag_conv.TAGConv.message": "4861282efe375942",
     "torch_geometric.nn.conv.tag_conv.TAGConv.message_and_aggregate": "e4763290e17edaff",
     "torch_geometric.utils._coalesce.coalesce": "bc3017c8c6ccb212",
     "torch_geometric.utils._index_sort.index_sort": "b5e2c6af93ac5277",
     "torch_geometric.utils._scatter.broadcast": "01eaf980bf11f755",
     "torch_geometric.utils._scatter.scatter": "60a748ab45d2266f",
     "torch_geometric.utils._spmm.spmm": "22de66762dc974cb",
     "torch_geometric.utils.loop.add_remaining_self_loops": "7fc0ae8d3d6f3f5a",
     "torch_geometric.utils.loop.add_self_loops": "8bc3453900972f1c",
     "torch_geometric.utils.loop.compute_loop_attr": "1b2c7f27947d5ad5",
     "torch_geometric.utils.num_nodes.maybe_num_nodes": "d818e742b4dd1dfc",
     "torch_geometric.utils.sparse.is_torch_sparse_tensor": "2717b5440caaba35",
     "torch_geometric.utils.sparse.set_sparse_value": "3e50e2bfbc3404b4",
     "torch_geometric.utils.sparse.to_edge_index": "1191198c16e75ad5",
     "torch_geometric.utils.sparse.to_torch_coo_tensor": "55337f53371be592",
     "torch_geometric.utils.sparse.to_torch_csr_tensor": "d997ed08926c9f7c",
     "torch_geometric.nn.conv.message_passing.MessagePassing.propagate:signature": "15a4a96beceb73da"
    }
   }
  ],
  "torch_geometric.nn.conv.transformer_conv.TransformerConv": [
   {
    "verified_on": ["2.8.1", "2.9.0.dev20261027"],
    "functions": {
     "torch_geometric.nn.conv.message_passing.MessagePassing.aggregate": "7708b8806a341fdc",
     "torch_geometric.nn.conv.message_passing.MessagePassing.edge_update": "b2b99c7f3e2565fc",
     "torch_geometric.nn.conv.message_passing.MessagePassing.message_and_aggregate": "59c894d27118e2f9",
     "torch_geometric.nn.conv.message_passing.MessagePassing.update": "c66298aa4b50c783",
     "torch_geometric.nn.conv.transformer_conv.TransformerConv.__init__": "e7186e25d8a66da6",
     "torch_geometric.nn.conv.transformer_conv.TransformerConv.forward": "3f632b693e7ef21a",
     "torch_geometric.nn.conv.transformer_conv.TransformerConv.message": "a5891bd020a54a5f",
     "torch_geometric.utils._scatter.broadcast": "01eaf980bf11f755",
     "torch_geometric.utils._scatter.scatter": "60a748ab45d2266f",
     "torch_geometric.utils._segment._torch_segment": "ca55b06f84d67aba",
     "torch_geometric.utils._segment.segment": "120b6d805e10484a",
     "torch_geometric.utils._softmax.softmax": "526253f0458ea923",
     "torch_geometric.utils.num_nodes.maybe_num_nodes": "d818e742b4dd1dfc",
     "torch_geometric.nn.conv.message_passing.MessagePassing.propagate:signature": "15a4a96beceb73da"
    }
   }
  ],
  "torch_geometric.nn.conv.wl_conv_continuous.WLConvContinuous": [
   {
    "verified_on": ["2.8.1", "2.9.0.dev20261027"],
    "functions": {
     "torch_geometric.nn.conv.message_passing.MessagePassing.aggregate": "7708b8806a341fdc",
     "torch_geometric.nn.conv.message_passing.MessagePassing.edge_update": "b2b99c7f3e2565fc",
     "torch_geometric.nn.conv.message_passing.MessagePassing.update": "c66298aa4b50c783",
     "torch_geometric.nn.conv.wl_conv_continuous.WLConvContinuous.__init__": "23b6e3a074189b66",
     "torch_geometric.nn.conv.wl_conv_continuous.WLConvContinuous.forward": "2665c0c4103b5673",
     "torch_geometric.nn.conv.wl_conv_continuous.WLConvContinuous.message": "4861282efe375942",
     "torch_geometric.nn.conv.wl_conv_continuous.WLConvContinuous.message_and_aggregate": "16a9ee0b08da37ee",
     "torch_geometric.utils._scatter.broadcast": "01eaf980bf11f755",
     "torch_geometric.utils._scatter.scatter": "60a748ab45d2266f",
     "torch_geometric.utils._spmm.spmm": "22de66762dc974cb",
     "torch_geometric.utils.sparse.is_torch_sparse_tensor": "2717b5440caaba35",
     "torch_geometric.nn.conv.message_passing.MessagePassing.propagate:signature": "15a4a96beceb73da"
    }
   }
  ],
  "torch_geometric.nn.dense.linear.HeteroDictLinear": [
   {
    "verified_on": ["2.8.1", "2.9.0.dev20261027"],
    "functions": {
     "torch_geometric.nn.dense.linear.HeteroDictLinear.__init__": "b416fcf1edafe6c9",
     "torch_geometric.nn.dense.linear.HeteroDictLinear.forward": "7bbd07db3195398d",
     "torch_geometric.nn.dense.linear.HeteroDictLinear.initialize_parameters": "40a1f1d7625e1d8b",
     "torch_geometric.nn.dense.linear.is_uninitialized_parameter": "3180648014c68011"
    }
   }
  ],
  "torch_geometric.nn.dense.linear.HeteroLinear": [
   {
    "verified_on": ["2.8.1", "2.9.0.dev20261027"],
    "functions": {
     "torch_geometric.nn.dense.linear.HeteroLinear.__init__": "5786b354d9cff1f9",
     "torch_geometric.nn.dense.linear.HeteroLinear._update_timing_cache": "1eca29606679fe93",
     "torch_geometric.nn.dense.linear.HeteroLinear.forward": "ce26af5e642cd519",
     "torch_geometric.nn.dense.linear.HeteroLinear.forward_naive": "11914411110462d1",
     "torch_geometric.nn.dense.linear.HeteroLinear.forward_segmm": "4501ac26cb073f60",
     "torch_geometric.nn.dense.linear.HeteroLinear.initialize_parameters": "94e28691d826251b",
     "torch_geometric.nn.dense.linear.is_uninitialized_parameter": "3180648014c68011",
     "torch_geometric.utils._index_sort.index_sort": "b5e2c6af93ac5277"
    }
   }
  ],
  "torch_geometric.nn.dense.linear.Linear": [
   {
    "verified_on": ["2.8.1", "2.9.0.dev20261027"],
    "functions": {
     "torch_geometric.nn.dense.linear.Linear.__init__": "b855da51d442d3df",
     "torch_geometric.nn.dense.linear.Linear._load_from_state_dict": "a7c3eca1cc4c1470",
     "torch_geometric.nn.dense.linear.Linear._save_to_state_dict": "dc4781fa214e854f",
     "torch_geometric.nn.dense.linear.Linear.forward": "78fc690513f47415",
     "torch_geometric.nn.dense.linear.Linear.initialize_parameters": "70932cf4fb691310",
     "torch_geometric.nn.dense.linear.is_uninitialized_parameter": "3180648014c68011"
    }
   }
  ],
  "torch_geometric.nn.models.autoencoder.ARGA": [
   {
    "verified_on": ["2.8.1", "2.9.0.dev20261027"],
    "functions": {
     "torch_geometric.nn.inits.reset": "52fa6a7900a13d5e",
     "torch_geometric.nn.models.autoencoder.ARGA.__init__": "aec148c581357772",
     "torch_geometric.nn.models.autoencoder.ARGA.discriminator_loss": "51f825db2d515cc2",
     "torch_geometric.nn.models.autoencoder.ARGA.reg_loss": "a7bed66384c0ce87",
     "torch_geometric.nn.models.autoencoder.GAE.decode": "b80d49935b18f88c",
     "torch_geometric.nn.models.autoencoder.GAE.encode": "72742c27ef78cdf0",
     "torch_geometric.nn.models.autoencoder.GAE.forward": "93f22eb5dbe8a4cb",
     "torch_geometric.nn.models.autoencoder.GAE.recon_loss": "3238c67c46881a1c",
     "torch_geometric.nn.models.autoencoder.GAE.test": "7ff9a17d22122baf",
     "torch_geometric.utils._negative_sampling.edge_index_to_vector": "fb4ab9c454a7b91d",
     "torch_geometric.utils._negative_sampling.negative_sampling": "bd583aacf15fbd90",
     "torch_geometric.utils._negative_sampling.sample": "ce8183aac9ba1d79",
     "torch_geometric.utils._negative_sampling.vector_to_edge_index": "d21c09660e35a8c5",
     "torch_geometric.utils.functions.cumsum": "c3b42cafaf31cfa3",
     "torch_geometric.utils.num_nodes.maybe_num_nodes": "d818e742b4dd1dfc"
    }
   }
  ],
  "torch_geometric.nn.models.autoencoder.ARGVA": [
   {
    "verified_on": ["2.8.1", "2.9.0.dev20261027"],
    "functions": {
     "torch_geometric.nn.models.autoencoder.ARGA.discriminator_loss": "51f825db2d515cc2",
     "torch_geometric.nn.models.autoencoder.ARGA.reg_loss": "a7bed66384c0ce87",
     "torch_geometric.nn.models.autoencoder.ARGVA.__init__": "15caeca73dbc3ffe",
     "torch_geometric.nn.models.autoencoder.ARGVA.__logstd__.fget": "f4ace68ade5a229a",
     "torch_geometric.nn.models.autoencoder.ARGVA.__mu__.fget": "9ab248b2c6db7172",
     "torch_geometric.nn.models.autoencoder.ARGVA.encode": "6ace516109b95323",
     "torch_geometric.nn.models.autoencoder.ARGVA.kl_loss": "7bee069c3570040c",
     "torch_geometric.nn.models.autoencoder.ARGVA.reparametrize": "611d463cdb879af3",
     "torch_geometric.nn.models.autoencoder.GAE.decode": "b80d49935b18f88c",
     "torch_geometric.nn.models.autoencoder.GAE.forward": "93f22eb5dbe8a4cb",
     "torch_geometric.nn.models.autoencoder.GAE.recon_loss": "3238c67c46881a1c",
     "torch_geometric.nn.models.autoencoder.GAE.test": "7ff9a17d22122baf",
     "torch_geometric.utils._negative_sampling.edge_index_to_vector": "fb4ab9c454a7b91d",
     "torch_geometric.utils._negative_sampling.negative_sampling": "bd583aacf15fbd90",
     "torch_geometric.utils._negative_sampling.sample": "ce8183aac9ba1d79",
     "torch_geometric.utils._negative_sampling.vector_to_edge_index": "d21c09660e35a8c5",
     "torch_geometric.utils.functions.cumsum": "c3b42cafaf31cfa3",
     "torch_geometric.utils.num_nodes.maybe_num_nodes": "d818e742b4dd1dfc"
    }
   }
  ],
  "torch_geometric.nn.models.autoencoder.GAE": [
   {
    "verified_on": ["2.8.1", "2.9.0.dev20261027"],
    "functions": {
     "torch_geometric.nn.models.autoencoder.GAE.__init__": "78544d257ec05232",
     "torch_geometric.nn.models.autoencoder.GAE.decode": "b80d49935b18f88c",
     "torch_geometric.nn.models.autoencoder.GAE.encode": "72742c27ef78cdf0",
     "torch_geometric.nn.models.autoencoder.GAE.forward": "93f22eb5dbe8a4cb",
     "torch_geometric.nn.models.autoencoder.GAE.recon_loss": "3238c67c46881a1c",
     "torch_geometric.nn.models.autoencoder.GAE.test": "7ff9a17d22122baf",
     "torch_geometric.utils._negative_sampling.edge_index_to_vector": "fb4ab9c454a7b91d",
     "torch_geometric.utils._negative_sampling.negative_sampling": "bd583aacf15fbd90",
     "torch_geometric.utils._negative_sampling.sample": "ce8183aac9ba1d79",
     "torch_geometric.utils._negative_sampling.vector_to_edge_index": "d21c09660e35a8c5",
     "torch_geometric.utils.functions.cumsum": "c3b42cafaf31cfa3",
     "torch_geometric.utils.num_nodes.maybe_num_nodes": "d818e742b4dd1dfc"
    }
   }
  ],
  "torch_geometric.nn.models.autoencoder.InnerProductDecoder": [
   {
    "verified_on": ["2.8.1", "2.9.0.dev20261027"],
    "functions": {
     "torch_geometric.nn.models.autoencoder.InnerProductDecoder.forward": "b1bca44f4215c41b",
     "torch_geometric.nn.models.autoencoder.InnerProductDecoder.forward_all": "b7d40ce07c129c95"
    }
   }
  ],
  "torch_geometric.nn.models.autoencoder.VGAE": [
   {
    "verified_on": ["2.8.1", "2.9.0.dev20261027"],
    "functions": {
     "torch_geometric.nn.models.autoencoder.GAE.decode": "b80d49935b18f88c",
     "torch_geometric.nn.models.autoencoder.GAE.forward": "93f22eb5dbe8a4cb",
     "torch_geometric.nn.models.autoencoder.GAE.recon_loss": "3238c67c46881a1c",
     "torch_geometric.nn.models.autoencoder.GAE.test": "7ff9a17d22122baf",
     "torch_geometric.nn.models.autoencoder.VGAE.__init__": "c4cf7b92cd40c6cd",
     "torch_geometric.nn.models.autoencoder.VGAE.encode": "a19cef83f82422c5",
     "torch_geometric.nn.models.autoencoder.VGAE.kl_loss": "7bdec778c74c2a5c",
     "torch_geometric.nn.models.autoencoder.VGAE.reparametrize": "cac10ea1f5a2aedb",
     "torch_geometric.utils._negative_sampling.edge_index_to_vector": "fb4ab9c454a7b91d",
     "torch_geometric.utils._negative_sampling.negative_sampling": "bd583aacf15fbd90",
     "torch_geometric.utils._negative_sampling.sample": "ce8183aac9ba1d79",
     "torch_geometric.utils._negative_sampling.vector_to_edge_index": "d21c09660e35a8c5",
     "torch_geometric.utils.functions.cumsum": "c3b42cafaf31cfa3",
     "torch_geometric.utils.num_nodes.maybe_num_nodes": "d818e742b4dd1dfc"
    }
   }
  ],
  "torch_geometric.nn.models.basic_gnn.EdgeCNN": [
   {
    "verified_on": ["2.8.1", "2.9.0.dev20261027"],
    "functions": {
     "torch_geometric.nn.models.basic_gnn.BasicGNN.__init__": "04bc3d94701a96ae",
     "torch_geometric.nn.models.basic_gnn.BasicGNN.forward": "7c9d03c26c10c0df",
     "torch_geometric.nn.models.basic_gnn.BasicGNN.inference": "4ee14fa6ec6ee879",
     "torch_geometric.nn.models.basic_gnn.BasicGNN.inference_per_layer": "87e801ba0de981aa",
     "torch_geometric.nn.models.basic_gnn.EdgeCNN.init_conv": "de65c85dee625ff5",
     "torch_geometric.nn.resolver.activation_resolver": "6728949bc37d9a15",
     "torch_geometric.nn.resolver.normalization_resolver": "0614e3d69265a37f",
     "torch_geometric.nn.resolver.swish": "6dbf6fa02c64b65a"
    }
   }
  ],
  "torch_geometric.nn.models.basic_gnn.GAT": [
   {
    "verified_on": ["2.8.1", "2.9.0.dev20261027"],
    "functions": {
     "torch_geometric.nn.models.basic_gnn.BasicGNN.__init__": "04bc3d94701a96ae",
     "torch_geometric.nn.models.basic_gnn.BasicGNN.forward": "7c9d03c26c10c0df",
     "torch_geometric.nn.models.basic_gnn.BasicGNN.inference": "4ee14fa6ec6ee879",
     "torch_geometric.nn.models.basic_gnn.BasicGNN.inference_per_layer": "87e801ba0de981aa",
     "torch_geometric.nn.models.basic_gnn.GAT.init_conv": "383acbf9ad4a70fe",
     "torch_geometric.nn.resolver.activation_resolver": "6728949bc37d9a15",
     "torch_geometric.nn.resolver.normalization_resolver": "0614e3d69265a37f",
     "torch_geometric.nn.resolver.swish": "6dbf6fa02c64b65a"
    }
   }
  ],
  "torch_geometric.nn.models.basic_gnn.GCN": [
   {
    "verified_on": ["2.8.1", "2.9.0.dev20261027"],
    "functions": {
     "torch_geometric.nn.models.basic_gnn.BasicGNN.__init__": "04bc3d94701a96ae",
     "torch_geometric.nn.models.basic_gnn.BasicGNN.forward": "7c9d03c26c10c0df",
     "torch_geometric.nn.models.basic_gnn.BasicGNN.inference": "4ee14fa6ec6ee879",
     "torch_geometric.nn.models.basic_gnn.BasicGNN.inference_per_layer": "87e801ba0de981aa",
     "torch_geometric.nn.models.basic_gnn.GCN.init_conv": "7393e0dd5c400b1f",
     "torch_geometric.nn.resolver.activation_resolver": "6728949bc37d9a15",
     "torch_geometric.nn.resolver.normalization_resolver": "0614e3d69265a37f",
     "torch_geometric.nn.resolver.swish": "6dbf6fa02c64b65a"
    }
   }
  ],
  "torch_geometric.nn.models.basic_gnn.GIN": [
   {
    "verified_on": ["2.8.1", "2.9.0.dev20261027"],
    "functions": {
     "torch_geometric.nn.models.basic_gnn.BasicGNN.__init__": "04bc3d94701a96ae",
     "torch_geometric.nn.models.basic_gnn.BasicGNN.forward": "7c9d03c26c10c0df",
     "torch_geometric.nn.models.basic_gnn.BasicGNN.inference": "4ee14fa6ec6ee879",
     "torch_geometric.nn.models.basic_gnn.BasicGNN.inference_per_layer": "87e801ba0de981aa",
     "torch_geometric.nn.models.basic_gnn.GIN.init_conv": "bbc913bc08f9a1d3",
     "torch_geometric.nn.resolver.activation_resolver": "6728949bc37d9a15",
     "torch_geometric.nn.resolver.normalization_resolver": "0614e3d69265a37f",
     "torch_geometric.nn.resolver.swish": "6dbf6fa02c64b65a"
    }
   }
  ],
  "torch_geometric.nn.models.basic_gnn.GraphSAGE": [
   {
    "verified_on": ["2.8.1", "2.9.0.dev20261027"],
    "functions": {
     "torch_geometric.nn.models.basic_gnn.BasicGNN.__init__": "04bc3d94701a96ae",
     "torch_geometric.nn.models.basic_gnn.BasicGNN.forward": "7c9d03c26c10c0df",
     "torch_geometric.nn.models.basic_gnn.BasicGNN.inference": "4ee14fa6ec6ee879",
     "torch_geometric.nn.models.basic_gnn.BasicGNN.inference_per_layer": "87e801ba0de981aa",
     "torch_geometric.nn.models.basic_gnn.GraphSAGE.init_conv": "0b955454945ec538",
     "torch_geometric.nn.resolver.activation_resolver": "6728949bc37d9a15",
     "torch_geometric.nn.resolver.normalization_resolver": "0614e3d69265a37f",
     "torch_geometric.nn.resolver.swish": "6dbf6fa02c64b65a"
    }
   }
  ],
  "torch_geometric.nn.models.basic_gnn.PNA": [
   {
    "verified_on": ["2.8.1", "2.9.0.dev20261027"],
    "functions": {
     "torch_geometric.nn.models.basic_gnn.BasicGNN.__init__": "04bc3d94701a96ae",
     "torch_geometric.nn.models.basic_gnn.BasicGNN.forward": "7c9d03c26c10c0df",
     "torch_geometric.nn.models.basic_gnn.BasicGNN.inference": "4ee14fa6ec6ee879",
     "torch_geometric.nn.models.basic_gnn.BasicGNN.inference_per_layer": "87e801ba0de981aa",
     "torch_geometric.nn.models.basic_gnn.PNA.init_conv": "6aff744353788f6c",
     "torch_geometric.nn.resolver.activation_resolver": "6728949bc37d9a15",
     "torch_geometric.nn.resolver.normalization_resolver": "0614e3d69265a37f",
     "torch_geometric.nn.resolver.swish": "6dbf6fa02c64b65a"
    }
   }
  ],
  "torch_geometric.nn.models.correct_and_smooth.CorrectAndSmooth": [
   {
    "verified_on": ["2.8.1", "2.9.0.dev20261027"],
    "functions": {
     "torch_geometric.nn.models.correct_and_smooth.CorrectAndSmooth.__init__": "155b8356eba7fffb",
     "torch_geometric.nn.models.correct_and_smooth.CorrectAndSmooth.correct": "acaa14703d968387",
     "torch_geometric.nn.models.correct_and_smooth.CorrectAndSmooth.forward": "c84c310b0611d6e6",
     "torch_geometric.nn.models.correct_and_smooth.CorrectAndSmooth.smooth": "322b1610094763c6",
     "torch_geometric.utils._one_hot.one_hot": "ee02194945bb335d"
    }
   }
  ],
  "torch_geometric.nn.models.deep_graph_infomax.DeepGraphInfomax": [
   {
    "verified_on": ["2.8.1", "2.9.0.dev20261027"],
    "functions": {
     "torch_geometric.nn.models.deep_graph_infomax.DeepGraphInfomax.__init__": "7a267f143e82be47",
     "torch_geometric.nn.models.deep_graph_infomax.DeepGraphInfomax.discriminate": "48dd18852dbdb02f",
     "torch_geometric.nn.models.deep_graph_infomax.DeepGraphInfomax.forward": "3be1d67142d5c0c4",
     "torch_geometric.nn.models.deep_graph_infomax.DeepGraphInfomax.loss": "7769211141a30999",
     "torch_geometric.nn.models.deep_graph_infomax.DeepGraphInfomax.test": "f447c6584c913478"
    }
   }
  ],
  "torch_geometric.nn.models.deepgcn.DeepGCNLayer": [
   {
    "verified_on": ["2.8.1", "2.9.0.dev20261027"],
    "functions": {
     "torch_geometric.nn.models.deepgcn.DeepGCNLayer.__init__": "db8ef946c47168c5",
     "torch_geometric.nn.models.deepgcn.DeepGCNLayer.forward": "18154ee1ff17f260"
    }
   }
  ],
  "torch_geometric.nn.models.jumping_knowledge.HeteroJumpingKnowledge": [
   {
    "verified_on": ["2.8.1", "2.9.0.dev20261027"],
    "functions": {
     "torch_geometric.nn.models.jumping_knowledge.HeteroJumpingKnowledge.__init__": "ec0d63841bebb6f2",
     "torch_geometric.nn.models.jumping_knowledge.HeteroJumpingKnowledge.forward": "78f5bc9c5dcc822d"
    }
   }
  ],
  "torch_geometric.nn.models.jumping_knowledge.JumpingKnowledge": [
   {
    "verified_on": ["2.8.1", "2.9.0.dev20261027"],
    "functions": {
     "torch_geometric.nn.models.jumping_knowledge.JumpingKnowledge.__init__": "f9d3449dc6f7a4ae",
     "torch_geometric.nn.models.jumping_knowledge.JumpingKnowledge.forward": "5f9e514b72c8bb7a"
    }
   }
  ],
  "torch_geometric.nn.models.label_prop.LabelPropagation": [
   {
    "verified_on": ["2.8.1", "2.9.0.dev20261027"],
    "functions": {
     "torch_geometric.nn.conv.gcn_conv.gcn_norm": "d9fc7784c8a02f57",
     "torch_geometric.nn.conv.message_passing.MessagePassing.aggregate": "7708b8806a341fdc",
     "torch_geometric.nn.conv.message_passing.MessagePassing.edge_update": "b2b99c7f3e2565fc",
     "torch_geometric.nn.conv.message_passing.MessagePassing.update": "c66298aa4b50c783",
     "torch_geometric.nn.models.label_prop.LabelPropagation.__init__": "a11d2ee6498852a8",
     "torch_geometric.nn.models.label_prop.LabelPropagation.forward": "f8caafe7267b5d91",
     "torch_geometric.nn.models.label_prop.LabelPropagation.message": "4861282efe375942",
     "torch_geometric.nn.models.label_prop.LabelPropagation.message_and_aggregate": "850cf33d6e406b1a",
     "torch_geometric.utils._coalesce.coalesce": "bc3017c8c6ccb212",
     "torch_geometric.utils._index_sort.index_sort": "b5e2c6af93ac5277",
     "torch_geometric.utils._one_hot.one_hot": "ee02194945bb335d",
     "torch_geometric.utils._scatter.broadcast": "01eaf980bf11f755",
     "torch_geometric.utils._scatter.scatter": "60a748ab45d2266f",
     "torch_geometric.utils._spmm.spmm": "22de66762dc974cb",
     "torch_geometric.utils.loop.add_remaining_self_loops": "7fc0ae8d3d6f3f5a",
     "torch_geometric.utils.loop.add_self_loops": "8bc3453900972f1c",
     "torch_geometric.utils.loop.compute_loop_attr": "1b2c7f27947d5ad5",
     "torch_geometric.utils.num_nodes.maybe_num_nodes": "d818e742b4dd1dfc",
     "torch_geometric.utils.sparse.is_torch_sparse_tensor": "2717b5440caaba35",
     "torch_geometric.utils.sparse.set_sparse_value": "3e50e2bfbc3404b4",
     "torch_geometric.utils.sparse.to_edge_index": "1191198c16e75ad5",
     "torch_geometric.utils.sparse.to_torch_coo_tensor": "55337f53371be592",
     "torch_geometric.utils.sparse.to_torch_csr_tensor": "d997ed08926c9f7c",
     "torch_geometric.nn.conv.message_passing.MessagePassing.propagate:signature": "15a4a96beceb73da"
    }
   }
  ],
  "torch_geometric.nn.models.lightgcn.LightGCN": [
   {
    "verified_on": ["2.8.1", "2.9.0.dev20261027"],
    "functions": {
     "torch_geometric.nn.models.lightgcn.LightGCN.__init__": "4ce483b745991f1b",
     "torch_geometric.nn.models.lightgcn.LightGCN.forward": "48f74073c4068f77",
     "torch_geometric.nn.models.lightgcn.LightGCN.get_embedding": "3ae5adfe46e16dc7",
     "torch_geometric.nn.models.lightgcn.LightGCN.link_pred_loss": "d0fe8ff86ed431ab",
     "torch_geometric.nn.models.lightgcn.LightGCN.predict_link": "1a85a6d509fd22ea",
     "torch_geometric.nn.models.lightgcn.LightGCN.recommend": "38d4f92485bf5638",
     "torch_geometric.nn.models.lightgcn.LightGCN.recommendation_loss": "5d0849700fc38fb6",
     "torch_geometric.utils.sparse.is_sparse": "bfc03ce674392815",
     "torch_geometric.utils.sparse.is_torch_sparse_tensor": "2717b5440caaba35",
     "torch_geometric.utils.sparse.to_edge_index": "1191198c16e75ad5"
    }
   }
  ],
  "torch_geometric.nn.models.linkx.LINKX": [
   {
    "verified_on": ["2.8.1", "2.9.0.dev20261027"],
    "functions": {
     "torch_geometric.nn.models.linkx.LINKX.__init__": "5800cc98ca9ec9d9",
     "torch_geometric.nn.models.linkx.LINKX.forward": "52594be7b50be4e6"
    }
   }
  ],
  "torch_geometric.nn.models.linkx.SparseLinear": [
   {
    "verified_on": ["2.8.1", "2.9.0.dev20261027"],
    "functions": {
     "torch_geometric.nn.conv.message_passing.MessagePassing.aggregate": "7708b8806a341fdc",
     "torch_geometric.nn.conv.message_passing.MessagePassing.edge_update": "b2b99c7f3e2565fc",
     "torch_geometric.nn.conv.message_passing.MessagePassing.update": "c66298aa4b50c783",
     "torch_geometric.nn.models.linkx.SparseLinear.__init__": "b7fe4693522fbfd9",
     "torch_geometric.nn.models.linkx.SparseLinear.forward": "0d77b969ff3c5590",
     "torch_geometric.nn.models.linkx.SparseLinear.message": "65566d00e7f1c4d2",
     "torch_geometric.nn.models.linkx.SparseLinear.message_and_aggregate": "3c2028c40442dc62",
     "torch_geometric.utils._scatter.broadcast": "01eaf980bf11f755",
     "torch_geometric.utils._scatter.scatter": "60a748ab45d2266f",
     "torch_geometric.utils._spmm.spmm": "22de66762dc974cb",
     "torch_geometric.utils.sparse.is_torch_sparse_tensor": "2717b5440caaba35",
     "torch_geometric.nn.conv.message_passing.MessagePassing.propagate:signature": "15a4a96beceb73da"
    }
   }
  ],
  "torch_geometric.nn.models.mask_label.MaskLabel": [
   {
    "verified_on": ["2.8.1", "2.9.0.dev20261027"],
    "functions": {
     "torch_geometric.nn.models.mask_label.MaskLabel.__init__": "8ebe02278f624eea",
     "torch_geometric.nn.models.mask_label.MaskLabel.forward": "838ab7a1613bab87",
     "torch_geometric.nn.models.mask_label.MaskLabel.ratio_mask": "00aef7510e114288"
    }
   }
  ],
  "torch_geometric.nn.models.mlp.MLP": [
   {
    "verified_on": ["2.8.1", "2.9.0.dev20261027"],
    "functions": {
     "torch_geometric.nn.models.mlp.MLP.__init__": "eba0a9afcd2b48dd",
     "torch_geometric.nn.models.mlp.MLP.forward": "aa5b5a9a2a6c5fab",
     "torch_geometric.nn.models.mlp.MLP.in_channels.fget": "dae8e1942c9cf304",
     "torch_geometric.nn.models.mlp.MLP.num_layers.fget": "8bd72aad5ae00d77",
     "torch_geometric.nn.models.mlp.MLP.out_channels.fget": "4587dcb9eae5585d",
     "torch_geometric.nn.resolver.activation_resolver": "6728949bc37d9a15",
     "torch_geometric.nn.resolver.normalization_resolver": "0614e3d69265a37f",
     "torch_geometric.nn.resolver.swish": "6dbf6fa02c64b65a"
    }
   }
  ],
  "torch_geometric.nn.models.pmlp.PMLP": [
   {
    "verified_on": ["2.8.1", "2.9.0.dev20261027"],
    "functions": {
     "torch_geometric.nn.models.pmlp.PMLP.__init__": "60e3e23fc243d1b4",
     "torch_geometric.nn.models.pmlp.PMLP.forward": "a1c18e6a746a0e9e"
    }
   }
  ],
  "torch_geometric.nn.models.polynormer.Polynormer": [
   {
    "verified_on": ["2.8.1", "2.9.0.dev20261027"],
    "functions": {
     "torch_geometric.nn.models.polynormer.Polynormer.__init__": "2df2f9af5267c0ae",
     "torch_geometric.nn.models.polynormer.Polynormer.forward": "be8bfc4c0d47da42",
     "torch_geometric.utils._scatter.broadcast": "01eaf980bf11f755",
     "torch_geometric.utils._scatter.scatter": "60a748ab45d2266f",
     "torch_geometric.utils._to_dense_batch.to_dense_batch": "760fca67c82e3fee",
     "torch_geometric.utils.functions.cumsum": "c3b42cafaf31cfa3"
    }
   }
  ],
  "torch_geometric.nn.models.rect.RECT_L": [
   {
    "verified_on": ["2.8.1", "2.9.0.dev20261027"],
    "functions": {
     "torch_geometric.nn.models.rect.RECT_L.__init__": "d917e8890b8e4613",
     "torch_geometric.nn.models.rect.RECT_L.embed": "018fd0802fcb04f2",
     "torch_geometric.nn.models.rect.RECT_L.forward": "a3651214ea03bbe7",
     "torch_geometric.nn.models.rect.RECT_L.get_semantic_labels": "af925f79796a6275",
     "torch_geometric.utils._scatter.broadcast": "01eaf980bf11f755",
     "torch_geometric.utils._scatter.scatter": "60a748ab45d2266f"
    }
   }
  ],
  "torch_geometric.nn.models.rev_gnn.GroupAddRev": [
   {
    "verified_on": ["2.8.1", "2.9.0.dev20261027"],
    "functions": {
     "torch_geometric.nn.models.rev_gnn.GroupAddRev.__init__": "cee06126e0275841",
     "torch_geometric.nn.models.rev_gnn.GroupAddRev._chunk": "8f9a2c0988e7b2f9",
     "torch_geometric.nn.models.rev_gnn.GroupAddRev._forward": "227c899696a00a47",
     "torch_geometric.nn.models.rev_gnn.GroupAddRev._inverse": "a524b1b9498efd3d",
     "torch_geometric.nn.models.rev_gnn.GroupAddRev.num_groups.fget": "308f1f8e5fbc1aca",
     "torch_geometric.nn.models.rev_gnn.InvertibleModule._fn_apply": "894abaedde8ff8b9",
     "torch_geometric.nn.models.rev_gnn.InvertibleModule.forward": "dd6d940a07806958",
     "torch_geometric.nn.models.rev_gnn.InvertibleModule.inverse": "6328b56ad0069746"
    }
   }
  ],
  "torch_geometric.nn.models.sgformer.GraphModule": [
   {
    "verified_on": ["2.8.1", "2.9.0.dev20261027"],
    "functions": {
     "torch_geometric.nn.models.sgformer.GraphModule.__init__": "8432f81c15ce466f",
     "torch_geometric.nn.models.sgformer.GraphModule.forward": "13baba2d63bccd41"
    }
   }
  ],
  "torch_geometric.nn.models.sgformer.SGFormer": [
   {
    "verified_on": ["2.8.1", "2.9.0.dev20261027"],
    "functions": {
     "torch_geometric.nn.models.sgformer.SGFormer.__init__": "2fdcdbc8284b9552",
     "torch_geometric.nn.models.sgformer.SGFormer.forward": "d7641ec42f0420b5"
    }
   }
  ],
  "torch_geometric.nn.models.sgformer.SGModule": [
   {
    "verified_on": ["2.8.1", "2.9.0.dev20261027"],
    "functions": {
     "torch_geometric.nn.models.sgformer.SGModule.__init__": "c5e4bd3ef21a8777",
     "torch_geometric.nn.models.sgformer.SGModule.forward": "5a49b981ddbcdcb9",
     "torch_geometric.utils._scatter.broadcast": "01eaf980bf11f755",
     "torch_geometric.utils._scatter.scatter": "60a748ab45d2266f",
     "torch_geometric.utils._to_dense_batch.to_dense_batch": "760fca67c82e3fee",
     "torch_geometric.utils.functions.cumsum": "c3b42cafaf31cfa3"
    }
   }
  ],
  "torch_geometric.nn.module_dict.ModuleDict": [
   {
    "verified_on": ["2.8.1", "2.9.0.dev20261027"],
    "functions": {
     "torch_geometric.nn.module_dict.ModuleDict.__contains__": "08864a8c4cec3ff2",
     "torch_geometric.nn.module_dict.ModuleDict.__delitem__": "e3ff5f375711250f",
     "torch_geometric.nn.module_dict.ModuleDict.__getitem__": "be24248976f1077d",
     "torch_geometric.nn.module_dict.ModuleDict.__init__": "da847079c959aff5",
     "torch_geometric.nn.module_dict.ModuleDict.__setitem__": "14ac5181a7404012",
     "torch_geometric.nn.module_dict.ModuleDict.items": "3b86da197255edd7",
     "torch_geometric.nn.module_dict.ModuleDict.keys": "042301e08aa31446",
     "torch_geometric.nn.module_dict.ModuleDict.to_external_key": "11c6c6f7f6994b5c",
     "torch_geometric.nn.module_dict.ModuleDict.to_internal_key": "34da205b0817f38a"
    }
   }
  ],
  "torch_geometric.nn.norm.batch_norm.BatchNorm": [
   {
    "verified_on": ["2.8.1", "2.9.0.dev20261027"],
    "functions": {
     "torch_geometric.nn.norm.batch_norm.BatchNorm.__init__": "f549c30d2b0532eb",
     "torch_geometric.nn.norm.batch_norm.BatchNorm.forward": "96c06fbac5d87889",
     "torch_geometric.nn.norm.batch_norm.BatchNorm.reset_running_stats": "60bd9b4f361bc373"
    }
   }
  ],
  "torch_geometric.nn.norm.batch_norm.HeteroBatchNorm": [
   {
    "verified_on": ["2.8.1", "2.9.0.dev20261027"],
    "functions": {
     "torch_geometric.nn.norm.batch_norm.HeteroBatchNorm.__init__": "4cd46e87209c2124",
     "torch_geometric.nn.norm.batch_norm.HeteroBatchNorm.forward": "77267f30afe65e43",
     "torch_geometric.nn.norm.batch_norm.HeteroBatchNorm.reset_running_stats": "e3b3ab541fbc7390"
    }
   }
  ],
  "torch_geometric.nn.norm.layer_norm.HeteroLayerNorm": [
   {
    "verified_on": ["2.8.1", "2.9.0.dev20261027"],
    "functions": {
     "torch_geometric.nn.norm.layer_norm.HeteroLayerNorm.__init__": "ecce9a7001b088b2",
     "torch_geometric.nn.norm.layer_norm.HeteroLayerNorm.forward": "9982a174556f5e19"
    }
   }
  ],
  "torch_geometric.nn.norm.layer_norm.LayerNorm": [
   {
    "verified_on": ["2.8.1", "2.9.0.dev20261027"],
    "functions": {
     "torch_geometric.nn.norm.layer_norm.LayerNorm.__init__": "c507a57526b0942b",
     "torch_geometric.nn.norm.layer_norm.LayerNorm.forward": "a5f817d115423dc3",
     "torch_geometric.utils._degree.degree": "1380da1dc1429c3f",
     "torch_geometric.utils._scatter.broadcast": "01eaf980bf11f755",
     "torch_geometric.utils._scatter.scatter": "60a748ab45d2266f",
     "torch_geometric.utils.num_nodes.maybe_num_nodes": "d818e742b4dd1dfc"
    }
   }
  ],
  "torch_geometric.nn.norm.msg_norm.MessageNorm": [
   {
    "verified_on": ["2.8.1", "2.9.0.dev20261027"],
    "functions": {
     "torch_geometric.nn.norm.msg_norm.MessageNorm.__init__": "f63bd5c35b30046c",
     "torch_geometric.nn.norm.msg_norm.MessageNorm.forward": "319b2498578443d4"
    }
   }
  ],
  "torch_geometric.nn.parameter_dict.ParameterDict": [
   {
    "verified_on": ["2.8.1", "2.9.0.dev20261027"],
    "functions": {
     "torch_geometric.nn.parameter_dict.ParameterDict.__contains__": "08864a8c4cec3ff2",
     "torch_geometric.nn.parameter_dict.ParameterDict.__delitem__": "e3ff5f375711250f",
     "torch_geometric.nn.parameter_dict.ParameterDict.__getitem__": "45d26918158b2186",
     "torch_geometric.nn.parameter_dict.ParameterDict.__init__": "3fe50fa7127f39ce",
     "torch_geometric.nn.parameter_dict.ParameterDict.__setitem__": "0583258ee932364f",
     "torch_geometric.nn.parameter_dict.ParameterDict.items": "ef22bae03b5a2329",
     "torch_geometric.nn.parameter_dict.ParameterDict.keys": "042301e08aa31446",
     "torch_geometric.nn.parameter_dict.ParameterDict.to_external_key": "11c6c6f7f6994b5c",
     "torch_geometric.nn.parameter_dict.ParameterDict.to_internal_key": "34da205b0817f38a"
    }
   }
  ],
  "torch_geometric.nn.to_hetero_with_bases_transformer.HeteroBasisConv": [
   {
    "verified_on": ["2.8.1", "2.9.0.dev20261027"],
    "functions": {
     "torch_geometric.nn.to_hetero_with_bases_transformer.HeteroBasisConv.__init__": "e7865abbc379db33",
     "torch_geometric.nn.to_hetero_with_bases_transformer.HeteroBasisConv.forward": "19fc782840611e02",
     "torch_geometric.nn.to_hetero_with_bases_transformer.get_edge_offset_dict": "79ebf806b7bef9be",
     "torch_geometric.nn.to_hetero_with_bases_transformer.get_edge_type": "e0bebbb3a1809594",
     "torch_geometric.nn.to_hetero_with_bases_transformer.get_node_offset_dict": "3dcd09d56cc73cc2",
     "torch_geometric.nn.to_hetero_with_bases_transformer.group_edge_placeholder": "9bfa28efc055c0d8",
     "torch_geometric.nn.to_hetero_with_bases_transformer.group_node_placeholder": "fde9da3c8dc88174",
     "torch_geometric.nn.to_hetero_with_bases_transformer.hook": "9b811e365e239ce5"
    }
   }
  ],
  "torch_geometric.nn.to_hetero_with_bases_transformer.LinearAlign": [
   {
    "verified_on": ["2.8.1", "2.9.0.dev20261027"],
    "functions": {
     "torch_geometric.nn.to_hetero_with_bases_transformer.LinearAlign.__init__": "b0c35563c0c783b2",
     "torch_geometric.nn.to_hetero_with_bases_transformer.LinearAlign.forward": "b844f3cc3f504949",
     "torch_geometric.nn.to_hetero_with_bases_transformer.key2str": "f8d34e6891f08850"
    }
   }
  ],
  "torch_geometric.utils._trim_to_layer.TrimToLayer": [
   {
    "verified_on": ["2.8.1", "2.9.0.dev20261027"],
    "functions": {
     "torch_geometric.utils._trim_to_layer.TrimToLayer.forward": "a4912d2943efefc5",
     "torch_geometric.utils._trim_to_layer.trim_adj": "2c99a3e9ed53b27d",
     "torch_geometric.utils._trim_to_layer.trim_feat": "5f2bb3e969587407",
     "torch_geometric.utils._trim_to_layer.trim_sparse_tensor": "8f50007e347941e7",
     "torch_geometric.utils._trim_to_layer.trim_to_layer": "b704bf102c5534f5"
    }
   }
  ]
 }
}
