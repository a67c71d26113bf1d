"""Synthetic playlists with known ground truth, for the offline demo and tests (DESIGN, offline).

Public names: World, Scene, VisualFacts, load_world, save_world, world_path, scenes_in, scene_at,
facts_visible_at, make_collection, plan_world.
"""

from playlisteval.world.synth.make import make_collection, plan_world
from playlisteval.world.synth.world import (
    Scene,
    VisualFacts,
    World,
    facts_visible_at,
    load_world,
    save_world,
    scene_at,
    scenes_in,
    world_path,
)

__all__ = [
    "Scene", "VisualFacts", "World", "facts_visible_at", "load_world", "make_collection", "plan_world",
    "save_world", "scene_at", "scenes_in", "world_path",
]
