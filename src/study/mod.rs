//! Statistics of the reward against executed outcomes, plots, and reports. Not written yet.
