"""From a failing criterion to a reviewed change and its verdict, a feature slice: failures grouped with their
evidence, proposals written from templates or by a model, reviews, and the verdict on a tried change."""
