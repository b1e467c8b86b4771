package io.github.ringbus.spring;

import io.github.ringbus.PipelineMonitor;
import io.github.ringbus.StageTimes;

import java.util.List;

/** Hands every observation to several monitors, in order; asks for stage times when any of them does. */
final class CompositePipelineMonitor implements PipelineMonitor {

    private final PipelineMonitor[] monitors;
    private final boolean timesStages;

    private CompositePipelineMonitor(PipelineMonitor[] monitors) {
        this.monitors = monitors;
        boolean times = false;
        for (PipelineMonitor monitor : monitors) {
            times |= monitor.timesStages();
        }
        this.timesStages = times;
    }

    /**
     * @param monitors the monitors, at least one
     * @return the only monitor, or one that calls them all
     */
    static PipelineMonitor of(List<PipelineMonitor> monitors) {
        return monitors.size() == 1 ? monitors.get(0)
                : new CompositePipelineMonitor(monitors.toArray(new PipelineMonitor[0]));
    }

    @Override
    public boolean timesStages() {
        return timesStages;
    }

    @Override
    public void commandCompleted(String commandName, Throwable failure, StageTimes times) {
        for (PipelineMonitor monitor : monitors) {
            monitor.commandCompleted(commandName, failure, times);
        }
    }

    @Override
    public void appended(int commands, int events) {
        for (PipelineMonitor monitor : monitors) {
            monitor.appended(commands, events);
        }
    }
}
