//! Image names, Dockerfile rendering, and the base -> environment -> instance build plan. Not written yet.
