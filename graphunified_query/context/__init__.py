"""The context pipeline between retrieval and generation: risk and metadata filters, link expansion,
ordering and packing under a token budget (`pipeline.ContextPipeline`).

Nothing is imported here, so the generation package can use `facts` without an import cycle.
"""
